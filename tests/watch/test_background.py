"""The analyzer in a thread of its own (`Engine(background=True)`, what the screen and
`--format jsonl` use): the same events as when it runs inline, the live events still coming
while an analysis is under way, and a bounded queue of lines when the analyzer is behind.
Synchronized on events, never on time (timeouts are hang guards only)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_trace.watch import engine as engine_mod
from acp_trace.watch import judge as judge_mod
from acp_trace.watch.engine import Engine
from tracebuilder import TraceBuilder

HANG = 120.0  # seconds: a hang guard, never a measure


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _trace(b: TraceBuilder | None = None) -> TraceBuilder:
    b = b or TraceBuilder(agent="demo-agent", version="9.9")
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s1"})
    for session, marker in (("s1", True), ("s1", False)):
        rid = b.resume(session, dt=2)
        b.history(session, 4, dt=3)
        if marker:
            b.marker(session)
        b.response(rid, {}, dt=300)
    b.request("session/prompt", {"sessionId": "s1", "prompt": []})  # never answered
    b.event("exit", code=3, signal=None)
    return b


def _until_ended(engine: Engine, clock: Clock) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + HANG
    while not engine.all_ended():
        assert time.monotonic() < deadline, "the engine never finished"
        clock.now += 100.0
        events += engine.step()
        time.sleep(0.01)
    return events


def test_background_analysis_says_what_the_inline_one_says(tmp_path: Path) -> None:
    """Every event is the same, and every kind of event comes in the same order (a finding
    decided in the background comes when its run is collected, maybe after a later
    replay_started: docs/watch.md, "Order"); the trace ends after its last findings."""
    path = _trace().write(tmp_path / "t.jsonl")
    runs = []
    for background in (False, True):
        clock = Clock()
        # no bound on the hold for a verdict: a background run under load may take longer
        # than a step of this clock (the bound has its own test in test_engine.py)
        engine = Engine([str(path)], clock=clock, background=background, hold=float("inf"))
        runs.append(_until_ended(engine, clock))
    inline, threaded = runs
    for kind in {e["event"] for e in inline} | {e["event"] for e in threaded}:
        assert [e for e in threaded if e["event"] == kind] == [
            e for e in inline if e["event"] == kind
        ]
    lived = [e for e in threaded if e["event"] != "finding"]
    assert lived == [e for e in inline if e["event"] != "finding"]
    names = [e["event"] for e in threaded]
    assert names.count("response") == 2 and names[-1] == "trace_ended"
    rules = [e["rule"] for e in threaded if e["event"] == "finding"]
    assert "marker-missing" in rules and "unanswered-request" in rules


def test_live_events_go_on_while_an_analysis_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the analysis held up in its thread, the lines that arrive meanwhile are read and
    their marker is said at once; the outcome comes once the analysis is let go."""
    started, release = threading.Event(), threading.Event()
    real = judge_mod.Judge._judge

    def held(self: judge_mod.Judge, *args: Any) -> None:
        started.set()
        assert release.wait(HANG), "never let go"
        real(self, *args)

    monkeypatch.setattr(judge_mod.Judge, "_judge", held)
    b = TraceBuilder()
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s1"})
    first = len(b.lines)
    rid = b.resume("s1")
    b.history("s1", 3)
    b.marker("s1")
    b.response(rid, {}, dt=200)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in b.lines[:first]))
    clock = Clock()
    engine = Engine([str(path)], clock=clock, background=True)
    events = engine.step()
    assert [e["event"] for e in events] == ["trace_started"]
    assert started.wait(HANG) and engine.judge.busy()
    with path.open("ab") as out:
        out.write(b"".join(line + b"\n" for line in b.lines[first:]))
    clock.now += 100.0
    during = [e["event"] for e in engine.step()]
    assert during == ["replay_started", "marker"] and engine.judge.busy()
    assert not engine.judge_idle()
    release.set()
    after: list[str] = []
    deadline = time.monotonic() + HANG
    while "response" not in after:
        assert time.monotonic() < deadline, "the outcome never came"
        clock.now += 100.0
        after += [e["event"] for e in engine.step()]
        time.sleep(0.01)


def test_the_queue_for_the_analyzer_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the analyzer is held up with more lines than BACKLOG to take, the file is not
    read on (its bytes wait in the file, not in memory); once let go, all of it is read."""
    monkeypatch.setattr(engine_mod, "BACKLOG", 10)
    monkeypatch.setattr(engine_mod, "CATCH_UP", 1)
    monkeypatch.setattr(engine_mod.Follower, "poll", _small_polls(engine_mod.Follower.poll))
    started, release = threading.Event(), threading.Event()
    real = judge_mod.Judge._judge

    def held(self: judge_mod.Judge, *args: Any) -> None:
        started.set()
        assert release.wait(HANG), "never let go"
        real(self, *args)

    monkeypatch.setattr(judge_mod.Judge, "_judge", held)
    b = TraceBuilder()
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s1"})
    b.history("s1", 40)
    b.event("exit", code=0, signal=None)
    path = b.write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock, background=True, interval=0.0)
    engine.step()
    assert started.wait(HANG)
    for _ in range(20):
        clock.now += 100.0
        engine.step()
    held_at = engine.lines_read
    assert engine.judge.backlog() >= 10 and held_at < len(b.lines)
    for _ in range(5):
        clock.now += 100.0
        engine.step()
    assert engine.lines_read == held_at  # nothing more read while the analyzer is behind
    release.set()
    _until_ended(engine, clock)
    assert engine.lines_read == len(b.lines)


def _small_polls(poll: Any) -> Any:
    """Follower.poll taking about five lines at a time."""

    def small(self: Any, limit: int = 0) -> Any:
        return poll(self, 5 * 160)

    return small
