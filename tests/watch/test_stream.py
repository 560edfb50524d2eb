"""`acp-trace watch --format jsonl` speaks the analyzer's vocabulary: on every sample trace its
agent, gap, gap source and history bytes are those of `replays --format json` (floats rounded
alike), each trace's events come in time order, traces of any age are read with `--once`,
and text UTF-8 cannot hold is written escaped without ending the watch."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from acp_trace.watch.engine import Engine
from clirun import Cli, runner
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

HOUR = 3600.0


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return runner(tmp_path, monkeypatch, capsys)


def _old_samples(folder: Path) -> list[Path]:
    """Every sample trace copied into `folder`, last modified an hour ago."""
    folder.mkdir()
    copies = []
    for sample in sorted(SAMPLES.glob("*.jsonl")):
        copy = Path(shutil.copy(sample, folder / sample.name))
        os.utime(copy, (time.time() - HOUR, time.time() - HOUR))
        copies.append(copy)
    return copies


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_every_sample_trace_has_the_facts_of_replays(cli: Cli, tmp_path: Path) -> None:
    """watch --once on a folder of hour-old samples reads them all, and for every replay its
    agent, gap_ms, gap_source and history_bytes (at the response and at the marker) are
    exactly those of `replays --format json`."""
    copies = _old_samples(tmp_path / "samples")
    watched = cli("watch", "--once", "samples", width=None)
    assert watched.code == 0, watched.err
    replayed = cli("replays", "--format", "json", "samples", width=None)
    assert replayed.code == 0, replayed.err
    events = _events(watched.out)
    rows = json.loads(replayed.out)
    started = {e["trace"]: e for e in events if e["event"] == "trace_started"}
    assert set(started) == {f"samples/{c.name}" for c in copies}
    at = {e["event"]: {} for e in events}  # type: dict[str, dict[tuple[Any, ...], Any]]
    for e in events:
        at[e["event"]][(e["trace"], e.get("session"), e.get("request_id"))] = e
    decided = [r for r in rows if r["outcome"] != "open"]
    assert decided and "vendor:jetbrains.air.loadReplayEnd" in {r["gap_source"] for r in rows}
    for row in decided:
        key = (row["trace"], row["session"], row["request_id"])
        response = at["response"][key]
        facts = ("gap_ms", "gap_source", "history_updates", "history_bytes", "outcome")
        assert {f: response[f] for f in facts} == {f: row[f] for f in facts}, key
        assert started[row["trace"]]["agent"] == row["agent"], key
        marker = at.get("marker", {}).get(key)
        if marker is not None and row["marker_ms"] is not None:
            assert marker["history_bytes"] == row["history_bytes"], key
    markers = at.get("marker", {})
    assert any(k[0].endswith("demo-v2-complete.jsonl") for k in markers)


def test_each_traces_events_are_in_time_order_with_rounded_floats(cli: Cli, tmp_path: Path) -> None:
    """Per trace: trace_started first, trace_ended last, every t_ms in between ascending (a
    response before the next replay's start); no float longer than six decimals."""
    _old_samples(tmp_path / "samples")
    result = cli("watch", "--once", "samples", width=None)
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for e in _events(result.out):
        by_trace.setdefault(e["trace"], []).append(e)
        for value in e.values():
            if isinstance(value, float):
                assert round(value, 6) == value, e
    assert len(by_trace) >= 20
    for name, events in by_trace.items():
        assert events[0]["event"] == "trace_started" and events[-1]["event"] == "trace_ended"
        times = [e["t_ms"] for e in events if e.get("t_ms") is not None]
        assert times == sorted(times), name


def test_a_non_utf8_agent_path_is_escaped_and_the_next_trace_still_read(
    cli: Cli, tmp_path: Path
) -> None:
    """An agent named by a path with a byte UTF-8 cannot hold (`\\udce9`, as the recorder keeps
    it) is written as that escape; the watch goes on to the next trace, no traceback."""
    folder = tmp_path / "traces"
    folder.mkdir()
    odd = TraceBuilder(protocol=None)
    header = json.loads(odd.lines[0])
    header["command"] = ["node", "/opt/caf\udce9/ag\udce9nt.js"]
    odd.lines[0] = json.dumps(header).encode()
    odd.event("exit", code=0, signal=None)
    odd.write(folder / "a.jsonl")
    plain = TraceBuilder()
    plain.event("exit", code=0, signal=None)
    plain.write(folder / "b.jsonl")
    result = cli("watch", "--once", "traces", width=None)
    assert (result.code, result.err) == (0, "")
    assert '"agent":"ag\\\\udce9nt"' in result.out  # the six characters, as check writes them
    ended = [e["trace"] for e in _events(result.out) if e["event"] == "trace_ended"]
    assert ended == ["traces/a.jsonl", "traces/b.jsonl"]


def test_older_traces_in_a_folder_are_passed_over_and_said(tmp_path: Path) -> None:
    """Following a folder (not --once), traces older than 10 minutes are not read, and one
    `passed_over` event says how many and how to read them; a named old file is read."""
    copies = _old_samples(tmp_path / "samples")
    engine = Engine([str(tmp_path / "samples")])
    events = engine.step()
    passed = [e for e in events if e["event"] == "passed_over"]
    assert passed == [
        {
            "event": "passed_over",
            "count": len(copies),
            "why": "not modified in the 10 minutes before the watch started; name a file, or "
            "use --once, to read it whatever its age",
        }
    ]
    assert not engine.followers
    named = Engine([str(copies[0])])
    named.step()
    assert list(named.followers) == [str(copies[0])]
