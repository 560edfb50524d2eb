"""Tables at a terminal and in a pipe: ids, names and rule ids are never split over lines. At a
terminal they are shortened in the middle with an ellipsis to fit its width; in a pipe or a
file nothing is fitted or wrapped; json, csv and --wide keep every value whole."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from clirun import Cli
from tracebuilder import TraceBuilder

AGENT = "@agentclientprotocol/claude-agent-acp"
SESSIONS = [f"0198c0de-0000-7000-8000-00000000020{n}" for n in (1, 2, 3)]


def long_names(path: Path, took: tuple[float, ...] = (30, 1500, 400)) -> Path:
    """Three replays of a long-named agent on UUID sessions, then a prompt turn."""
    b = TraceBuilder(agent=AGENT, version="0.101.0")
    for session, ms in zip(SESSIONS, took, strict=True):
        rid = b.resume(session)
        b.history(session, 2)
        b.marker(session)
        b.state(session)
        b.response(rid, {}, dt=ms)
    p = b.request("session/prompt", {"sessionId": SESSIONS[0], "prompt": []})
    b.response(p, {})
    b.update(SESSIONS[0], "agent_message_chunk", dt=30, messageId="m9")
    b.state(SESSIONS[0], stopReason="end_turn", dt=20)
    return b.write(path)


def body(out: str) -> list[str]:
    """The rows of the first table of an output: the lines after its `---` rule, up to the
    first blank line or note."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip() or not line.startswith(
            ("@", "acp", "agent", "0198", "init", "sess", "claude")
        ):
            break
        rows.append(line)
    return rows


@pytest.mark.parametrize("width", [80, 120])
def test_replays_at_a_terminal_shorten_ids_and_names_on_one_line(
    cli: Cli, tmp_path: Path, width: int
) -> None:
    """Each replay is one line that fits; the agent is named without its npm scope, whole,
    and the session is shortened with an ellipsis, its end kept so the three stay apart."""
    long_names(tmp_path / "t.jsonl")
    out = cli("replays", "t.jsonl", width=width).out
    assert max(map(len, out.splitlines())) <= width
    rows = body(out)
    assert len(rows) == 3
    for row, end in zip(rows, ("202", "203", "201"), strict=True):
        agent, _version, session = row.split()[:3]
        assert agent == "claude-agent-acp"
        assert session.endswith(end)
    if width == 80:
        assert "…" in rows[0]


def test_replays_in_a_pipe_are_whole_and_not_wrapped(cli: Cli, tmp_path: Path) -> None:
    """Output that is no terminal (COLUMNS says 80) is not fitted: every value whole, a line
    per replay, however long."""
    long_names(tmp_path / "t.jsonl")
    out = cli("replays", "t.jsonl", width=None).out
    rows = body(out)
    assert len(rows) == 3 and "…" not in out
    assert [row.split()[:3] for row in rows] == [
        [AGENT, "0.101.0", SESSIONS[1]], [AGENT, "0.101.0", SESSIONS[2]],
        [AGENT, "0.101.0", SESSIONS[0]],
    ]  # fmt: skip
    assert max(map(len, out.splitlines())) > 80


def test_wide_json_and_csv_keep_every_value_whole(cli: Cli, tmp_path: Path) -> None:
    """--wide at a terminal, --format json and csv: the full agent and session ids."""
    long_names(tmp_path / "t.jsonl")
    wide = cli("replays", "t.jsonl", "--wide", width=80).out
    assert "…" not in wide and all(s in wide for s in SESSIONS) and AGENT in wide
    rows = orjson.loads(cli("replays", "t.jsonl", "--format", "json", width=80).out)
    assert [r["session"] for r in rows] == SESSIONS and rows[0]["agent"] == AGENT
    csv = cli("replays", "t.jsonl", "--format", "csv", width=80).out
    assert all(s in csv for s in SESSIONS) and "…" not in csv


@pytest.mark.parametrize("width", [80, 120, None])
def test_latency_by_agent_is_a_line_per_row(cli: Cli, tmp_path: Path, width: int | None) -> None:
    """latency --by agent: the agent version named once above its methods, a line per method,
    the method whole, at 80 and 120 columns and in a pipe (the agent whole there)."""
    long_names(tmp_path / "t.jsonl")
    out = cli("latency", "t.jsonl", "--by", "agent", width=width).out
    lines = out.splitlines()
    title = lines[0]
    assert title == f"{AGENT} 0.101.0:" if width is None else title.endswith("0.101.0:")
    rows = body(out)
    assert [row.split()[:2] for row in rows] == [
        ["initialize", "1"], ["session/prompt", "1"], ["session/resume", "3"]
    ]  # fmt: skip
    if width is not None:
        assert max(map(len, lines)) <= width


def test_latency_by_method_keeps_agents_apart(cli: Cli, tmp_path: Path) -> None:
    """Two agents answering the same methods: --by method never pools them (a row per agent
    version under each method, and in json); one agent alone: no agent columns."""
    long_names(tmp_path / "a.jsonl")
    b = TraceBuilder(agent="other-agent", version="2.0")
    rid = b.resume("s1")
    b.response(rid, {}, dt=5)
    b.write(tmp_path / "b.jsonl")
    doc = orjson.loads(cli("latency", ".", "--format", "json", "--table", "requests").out)
    assert list(doc) == ["requests"]
    rows = doc["requests"]
    resume = [(r["agent"], r["count"]) for r in rows if r["method"] == "session/resume"]
    assert resume == [(AGENT, 3), ("other-agent", 1)]
    out = cli("latency", ".", width=None).out
    resumes = out.split("session/resume:\n")[1]
    assert re.search(r"^other-agent +2\.0 +1 ", resumes, re.M)
    alone = cli("latency", "a.jsonl", width=None).out
    assert alone.startswith("method ") and AGENT not in alone


def test_prompt_turn_phases_in_the_order_they_happen(cli: Cli, tmp_path: Path) -> None:
    """The phases of a turn print in the order they happened (first chunk at 31 ms, then the
    end at 51 ms; acceptance, never seen, last), not alphabetically."""
    long_names(tmp_path / "t.jsonl")
    out = cli("latency", "t.jsonl", width=None).out
    phases = out.split("prompt turns")[1]
    order = [p for p in ("first_chunk_ms", "end_ms", "acceptance_ms") if p in phases]
    assert sorted(order, key=phases.index) == ["first_chunk_ms", "end_ms", "acceptance_ms"]


def test_diff_text_fits_the_terminal(cli: Cli, tmp_path: Path) -> None:
    """diff's table fits an 80-column terminal, a line per metric; in a pipe it is whole."""
    base = long_names(tmp_path / "base.jsonl")
    new = long_names(tmp_path / "new.jsonl", (300, 3000, 800))
    out = cli("diff", str(base), "--", str(new), width=80).out
    assert max(map(len, out.splitlines())) <= 80
    lines = out.splitlines()
    title = next(line for line in lines if line.startswith("gap "))
    assert title.endswith(" session/resume (samples: BASE 3, NEW 3):") and "…" in title
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    assert [line.split()[:2] for line in lines[rule + 1 : rule + 3]] == [
        ["p50", "401.0"], ["p90", "1,281.0"]
    ]  # fmt: skip
    piped = cli("diff", str(base), "--", str(new), width=None).out
    assert AGENT in piped and "…" not in piped


def test_no_number_is_cut_to_fit(cli: Cli, tmp_path: Path) -> None:
    """The bundled samples at 80 columns (a vendor gap source, `complete_failed`, UUIDs): the
    table fits by shortening names and the gap source, and every time is whole; at 50
    columns, too narrow for the numbers, the table is drawn wider than the terminal rather
    than cutting a number."""
    import shutil

    from testpaths import SAMPLES

    shutil.copytree(SAMPLES, tmp_path / "samples")
    data = orjson.loads(cli("replays", "samples", "--format", "json").out)
    times = {f"{r['response_ms']:,.1f}" for r in data if r["response_ms"] is not None}
    at80 = cli("replays", "samples", width=80).out
    assert max(map(len, at80.splitlines()[:-4])) <= 80
    assert "…" in at80 and "vendor:jetbrains.air.loadReplayEnd" not in at80
    for out in (at80, cli("replays", "samples", width=50).out):
        lines = out.splitlines()
        rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
        rows = lines[rule + 1 : rule + 1 + len(data)]
        shown = {line.split()[-1] for line in rows}
        missing = {t for t in times if float(t.replace(",", "")) >= 10} - shown
        assert not missing, (missing, out)
        assert not any(c.endswith("…") and c[0].isdigit() for c in " ".join(rows).split())
