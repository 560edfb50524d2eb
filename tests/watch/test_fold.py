"""The watch's analyzer over long sessions: settled windows folded out of what it reads again,
with the same findings and outcomes as `check` and `replays` on the whole file, and the rows
it keeps bounded however long the session grows (rows counted, no time measured)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from acp_trace.analysis import analyze
from acp_trace.watch import judge as judge_mod
from acp_trace.watch.engine import Engine
from acp_trace.watch.fold import stem
from tracebuilder import TraceBuilder


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _cycle(b: TraceBuilder, i: int) -> None:
    """One settled piece of a session's life; the kinds of faults vary with `i`."""
    s = f"s{i % 3}"
    variant = i % 8
    if variant == 6:  # a prompt turn: chunks, a permission asked and answered, stderr
        rid = b.request("session/prompt", {"sessionId": s, "prompt": []})
        for n in range(4):
            b.update(s, "agent_message_chunk", content={"type": "text", "text": f"c{n}"})
        ask = b.request(
            "session/request_permission",
            {"sessionId": s, "toolCall": {"toolCallId": "t"}, "options": []},
            src="agent",
        )
        b.response(ask, {"outcome": {"outcome": "cancelled"}}, src="client")
        b.text("stderr", f"turn {i} done")
        b.response(rid, {"stopReason": "end_turn"})
        return
    if variant == 7:  # a rejected resume that still sent history
        rid = b.resume(s, cursor={"type": "after", "messageId": "gone"})
        b.history(s, 1)
        b.error(rid, -32602)
        return
    rid = b.resume(s)
    b.history(s, 2 + i % 3, message_ids=variant != 4)
    b.text("stderr", f"loading phase {i}")
    if variant == 5:
        b.update(s, "usage_update", used=1, size=2)  # live before the marker
    if variant not in (1, 3):
        b.marker(s)
    if variant != 2:
        b.state(s)
    b.response(rid, {}, dt=30 + i)
    if variant == 3:
        b.marker(s)  # late: after the response
    if variant == 0 and i % 16 == 0:
        b.marker("s9")  # no replay covers it


def _long_trace(cycles: int) -> TraceBuilder:
    b = TraceBuilder(agent="demo-agent", version="9.9")
    for n in range(3):
        new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
        b.response(new, {"sessionId": f"s{n}"})
    for i in range(cycles):
        _cycle(b, i)
    b.event("exit", code=0, signal=None)
    return b


def _follow(
    tmp_path: Path, b: TraceBuilder, chunk: int = 7
) -> tuple[Engine, list[dict[str, Any]], int]:
    """The engine following the trace as it is written `chunk` lines at a time, one step per
    chunk; the events and the most rows its analyzer held at once."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    events: list[dict[str, Any]] = []
    most = 0
    for at in range(0, len(b.lines), chunk):
        with path.open("ab") as out:
            out.write(b"".join(line + b"\n" for line in b.lines[at : at + chunk]))
        clock.now += 100.0
        events += engine.step()
        book = engine.judge.books.get(str(path))
        most = max(most, book.rows if book else 0)
    for _ in range(3):
        clock.now += 100.0
        events += engine.step()
    return engine, events, most


def _unfolded(findings: pl.DataFrame) -> pl.DataFrame:
    """check's findings but those of the replay-fidelity rules, which watch leaves to the
    whole recording (`acp-trace fidelity`, `check`): its folded records hold neither a
    replay's whole source nor, while the replay runs, the replay itself."""
    from acp_trace.analysis.checks.fidelity_rules import FIDELITY_RULES

    return findings.filter(~pl.col("rule").is_in([r.id for r in FIDELITY_RULES]))


def test_a_long_session_fed_incrementally_gets_the_findings_and_outcomes_of_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replays of every kind of fault, prompt turns, permissions, stderr and a rejection, on
    three sessions, folded every few windows: the findings (rule, record, session, message)
    and every replay's outcome, gap and history are those of the whole file."""
    monkeypatch.setattr(judge_mod, "FOLD_ROWS", 40)
    b = _long_trace(64)
    engine, events, _most = _follow(tmp_path, b)
    book = engine.judge.books[str(tmp_path / "t.jsonl")]
    assert book.folded > len(b.lines) // 2  # most of it was folded out, many times
    whole = analyze(b.write(tmp_path / "whole.jsonl"))
    expected = _unfolded(whole.findings()).select("rule", "seq", "session", "message").rows()
    said = [e for e in events if e["event"] == "finding"]
    found = [(e["rule"], e["seq"], e["session"], e["message"]) for e in said]
    assert len(found) == len(set(found))  # each once
    # a finding is said when decided: the count of others like it is what was known then
    got = {(r, q, s, stem(m)) for r, q, s, m in found}
    want = {(r, q, s, stem(m)) for r, q, s, m in expected}
    assert want <= got
    for rule, seq, session, message in got - want:
        # said at the response, before a late marker came; said again with it, like check
        (late,) = [m for r, q, s, m in want if (r, q, s) == (rule, seq, session)]
        assert rule == "marker-missing" and late.startswith(message + "; a marker came only")
    rules = {r for r, *_ in found}
    assert {"marker-missing", "marker-late", "state-snapshot-missing"} <= rules
    assert {"marker-unexpected", "live-before-marker", "message-id-missing"} <= rules
    table = whole.replays
    decided = {(e["session"], e["request_id"]): e for e in events if e["event"] == "response"}
    assert len(decided) == table.height == 56
    for row in table.iter_rows(named=True):
        e = decided[(row["session"], row["request_id"])]
        assert e["outcome"] == row["outcome"]
        assert e["gap_ms"] == pytest.approx(row["gap_ms"])
        assert (e["history_updates"], e["history_bytes"]) == (
            row["history_updates"],
            row["history_bytes"],
        )
    assert events[-1]["event"] == "trace_ended"


def test_a_child_updated_before_its_announce_is_found_across_a_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child's live update in one window and its announce windows later: `check`'s
    child-update-before-announce, once, at the early update (kept as context)."""
    monkeypatch.setattr(judge_mod, "FOLD_ROWS", 20)
    b = TraceBuilder(agent="demo-agent", version="9.9", capabilities={"subagents": {}})
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s0"})
    rid = b.request("session/prompt", {"sessionId": "s0", "prompt": []})
    b.update("child", "usage_update", used=1, size=2)
    b.response(rid, {"stopReason": "end_turn"})
    for i in range(12):
        _cycle(b, i * 3)  # session s0 only
    rid = b.request("session/prompt", {"sessionId": "s0", "prompt": []})
    b.update("s0", "subagent_update", subagentSessionId="child", status="running")
    b.response(rid, {"stopReason": "end_turn"})
    b.event("exit", code=0, signal=None)
    engine, events, _most = _follow(tmp_path, b, chunk=5)
    assert engine.judge.books[str(tmp_path / "t.jsonl")].folded > 0
    whole = _unfolded(analyze(b.write(tmp_path / "whole.jsonl")).findings())
    expected = sorted(whole.select("rule", "seq", "session").rows())
    found = sorted((e["rule"], e["seq"], e["session"]) for e in events if e["event"] == "finding")
    assert found == expected


def test_the_rows_kept_do_not_grow_with_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four times the replays, the same most rows held at once: a window and the context,
    never the session so far; and no more Arrow memory held (a copy through pyarrow left
    234 KB allocated after 40 cycles and 988 KB after 160)."""
    import pyarrow

    monkeypatch.setattr(judge_mod, "FOLD_ROWS", 60)
    most, arrow = {}, {}
    for cycles in (40, 160):
        b = _long_trace(cycles)
        (tmp_path / str(cycles)).mkdir()
        engine, events, most[cycles] = _follow(tmp_path / str(cycles), b, chunk=9)
        arrow[cycles] = pyarrow.total_allocated_bytes()
        assert sum(e["event"] == "response" for e in events) == cycles - cycles // 8
        assert engine.judge.books[str(tmp_path / str(cycles) / "t.jsonl")].folded > 0
    assert arrow[160] <= arrow[40]
    assert most[160] <= most[40] + 5  # the same context: three sessions
    assert most[40] < 60 + 3 * 40  # FOLD_ROWS, a window of at most ~25 rows, context, a chunk
    assert len(_long_trace(160).lines) > 15 * most[160]


def test_one_replay_streaming_for_long_is_thinned_and_still_decided_like_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No quiet point for thousands of updates: the analyzed history of the open replay is
    let go past THIN_ROWS (rows bounded); its outcome and gap are `replays`', its history
    counts the live picture's, equal to `replays`'."""
    monkeypatch.setattr(judge_mod, "MAX_ROWS", 100)
    monkeypatch.setattr(judge_mod, "THIN_ROWS", 200)
    b = TraceBuilder(agent="demo-agent", version="9.9")
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s"})
    rid = b.resume("s")
    b.history("s", 600)
    b.text("stderr", "phase: loading took 3s")
    b.marker("s")
    b.state("s")
    b.response(rid, {}, dt=50)
    b.event("exit", code=0, signal=None)
    engine, events, most = _follow(tmp_path, b, chunk=25)
    assert engine.judge.books[str(tmp_path / "t.jsonl")].folded > 1000
    assert most < 200 + 100
    (decided,) = [e for e in events if e["event"] == "response"]
    row = analyze(b.write(tmp_path / "whole.jsonl")).replays.row(0, named=True)
    assert decided["outcome"] == row["outcome"]
    assert decided["gap_ms"] == pytest.approx(row["gap_ms"])
    assert decided["history_updates"] == row["history_updates"] == 1200
    assert decided["history_bytes"] == row["history_bytes"]


def test_the_replays_table_lists_the_newest_and_the_slowest_not_every_replay() -> None:
    """A thousand replays: the table's rows are the newest REPLAYS_SHOWN, newest first, then
    the slowest of the others; the filter applies before the limit."""
    from acp_trace.watch import views
    from acp_trace.watch.live import Replay

    engine = Engine([])
    for n in range(1000):
        r = Replay("t", f"s{n % 2}", str(n), "session/resume", n, outcome="complete")
        r.gap_ms = 5000.0 if n == 10 else float(n % 7)
        engine.live.replays[("t", str(n), r.session)] = r
    keys = [k for k, _ in views.replay_rows(engine, views.Filter())]
    ids = [k.split("\0")[1] for k in keys]
    assert ids == [str(n) for n in range(999, 999 - views.REPLAYS_SHOWN, -1)] + ["10"]
    odd = [k.split("\0")[1] for k, _ in views.replay_rows(engine, views.Filter(session="s1"))]
    assert len(odd) == views.REPLAYS_SHOWN and all(int(i) % 2 for i in odd)


def test_a_copied_frame_is_the_same_rows_and_types() -> None:
    """fold.copy (what the engine keeps after a fold, through Arrow IPC in memory): every
    column of the records' schema, nulls and all, comes back equal, with the same types."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from acp_trace.trace.lines import SCHEMA
    from acp_trace.watch.fold import copy

    rows = 2_000
    big = pl.DataFrame(
        {name: pl.Series(name, [None] * rows, dtype=dtype) for name, dtype in SCHEMA.items()}
    ).with_columns(
        pl.format("line {} of a message", pl.int_range(rows)).alias("msg"),
        pl.int_range(rows).alias("seq"),
        pl.int_range(rows).cast(SCHEMA["part"]).alias("part"),
        (pl.int_range(rows) % 2 == 0).alias("truncated"),
    )
    few = big.filter(pl.col("seq") % 500 == 0)
    copied = copy(few)
    assert copied.schema == few.schema == pl.Schema(SCHEMA)
    assert_frame_equal(copied, few)
    assert copied["msg"].to_list() == [f"line {n} of a message" for n in (0, 500, 1000, 1500)]
