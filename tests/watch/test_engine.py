"""The watch engine on a trace written a few lines at a time: events as the records arrive,
outcomes and findings exactly as `check` and `replays` decide them, end rules held until the
end, memory bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_trace.analysis import analyze
from acp_trace.watch import judge as judge_mod
from acp_trace.watch.engine import Engine
from tracebuilder import TraceBuilder


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _grow(path: Path, lines: list[bytes]) -> None:
    with path.open("ab") as out:
        out.write(b"".join(line + b"\n" for line in lines))


def _run(engine: Engine, clock: Clock, rounds: int = 3) -> list[dict[str, Any]]:
    """Steps until the analyzer has looked at everything (the clock moved past its wait)."""
    events: list[dict[str, Any]] = []
    for _ in range(rounds):
        clock.now += 100.0
        events += engine.step()
    return events


def _replay_trace(marker: bool) -> TraceBuilder:
    b = TraceBuilder(agent="demo-agent", version="9.9")
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "sess_1"})
    rid = b.resume("sess_1", dt=2)
    b.history("sess_1", 3, dt=3)
    if marker:
        b.marker("sess_1")
    b.state("sess_1")
    b.response(rid, {}, dt=400)
    return b


@pytest.mark.parametrize("marker", [True, False])
def test_a_replay_is_followed_as_it_is_written_and_decided_like_check(
    tmp_path: Path, marker: bool
) -> None:
    """replay_started, then the marker (when sent), then the response with the outcome and gap
    of `replays`, the findings of `check`, and the end; each once."""
    b = _replay_trace(marker)
    b.event("exit", code=0, signal=None)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    clock = Clock()
    engine = Engine([str(tmp_path)], clock=clock)
    cut = len(b.lines) - 5
    _grow(path, b.lines[:cut])
    first = _run(engine, clock)
    assert [e["event"] for e in first if e["event"] != "finding"][:2] == [
        "trace_started",
        "replay_started",
    ]
    assert not [e for e in first if e["event"] == "response"]
    (running,) = engine.live.replays.values()
    assert running.outcome is None and running.updates > 0
    _grow(path, b.lines[cut:])
    rest = _run(engine, clock)
    names = [e["event"] for e in rest]
    assert names.count("response") == 1 and names[-1] == "trace_ended"
    assert ("marker" in names + [e["event"] for e in first]) == marker
    whole = analyze(path)
    expected = whole.replays.row(0, named=True)
    response = next(e for e in rest if e["event"] == "response")
    assert response["outcome"] == expected["outcome"]
    gap = expected["marker_to_response_ms"] or expected["last_history_to_response_ms"]
    assert response["gap_ms"] == pytest.approx(gap)
    found = sorted((e["rule"], e["seq"]) for e in first + rest if e["event"] == "finding")
    assert found == sorted(whole.findings().select("rule", "seq").rows())
    assert ("marker-missing" in {r for r, _ in found}) == (not marker)


def test_end_rules_wait_for_the_end_of_the_trace(tmp_path: Path) -> None:
    """A request in flight is no `unanswered-request` while the trace is being written; it is
    one once the agent exited without answering."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    path = b.write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    before = _run(engine, clock)
    assert "unanswered-request" not in [e.get("rule") for e in before]
    _grow(path, [b'{"seq":9,"t_ns":99000000,"src":"tap","event":"exit","code":1,"signal":null}'])
    events = _run(engine, clock)
    assert [e.get("rule") for e in events].count("unanswered-request") == 1
    assert events[-1]["event"] == "trace_ended" and events[-1]["code"] == 1


def test_a_stray_file_in_the_folder_is_passed_over_and_said(tmp_path: Path) -> None:
    (tmp_path / "notes.log").write_text("not a trace\n")
    clock = Clock()
    engine = Engine([str(tmp_path)], clock=clock)
    events = _run(engine, clock)
    assert [(e["event"], Path(e["trace"]).name) for e in events] == [("skipped", "notes.log")]


def test_a_truncated_trace_starts_again(tmp_path: Path) -> None:
    """A trace written again from nothing is read again: the old replays are forgotten."""
    path = _replay_trace(True).write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    _run(engine, clock)
    assert len(engine.live.replays) == 1
    path.write_bytes(TraceBuilder().lines[0] + b"\n")
    events = _run(engine, clock)
    assert events[0] == {"event": "trace_reopened", "trace": str(path), "why": "truncated"}
    assert engine.live.replays == {}


def test_memory_is_bounded_old_rows_folded_into_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of updates make one growing row per kind run, a timeline of at most
    ROWS_KEPT rows with the rest counted, and the analyzer lets settled updates go."""
    monkeypatch.setattr(judge_mod, "MAX_ROWS", 500)
    b = TraceBuilder()
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s"})
    for i in range(3000):
        b.update("s", "agent_message_chunk" if i % 2 else "tool_call_update", dt=0.01)
    path = b.write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    _run(engine, clock)
    session = engine.live.traces[str(path)].sessions["s"]
    assert session.counts == {"agent_message_chunk": 1500, "tool_call_update": 1500}
    assert len(session.rows) == 400
    assert sum(session.folded.values()) + sum(r.count for r in session.rows) == 3001  # + response
    assert engine.judge.books[str(path)].rows < 500


def test_a_failing_analysis_is_said_and_the_watch_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a pass becomes one `error` event naming the trace; following goes on."""

    def broken(self: object, *args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(judge_mod.Judge, "_replays", broken)
    path = _replay_trace(True).write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    events = _run(engine, clock)
    errors = [e for e in events if e["event"] == "error"]
    assert errors == [
        {"event": "error", "trace": str(path), "message": "the analysis failed: RuntimeError: boom"}
    ]
    assert "replay_started" in [e["event"] for e in events]


def test_a_response_comes_before_a_later_replays_start(tmp_path: Path) -> None:
    """Following live: a replay answered and the next one started in the same read, the
    first's response (decided by the analyzer after both were read) is said before the second
    replay_started, every t_ms in order."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    first = b.resume("one")
    b.history("one", 1)
    b.marker("one")
    b.response(first, {}, dt=50)
    b.resume("two")
    b.history("two", 1)
    path = b.write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock, hold=1_000.0)  # this clock moves 100 s a step
    events = _run(engine, clock)
    names = [e["event"] for e in events if e["event"] != "finding"]
    assert names == [
        "trace_started",
        "replay_started",
        "marker",
        "response",
        "replay_started",
    ]
    times = [e["t_ms"] for e in events if e.get("t_ms") is not None]
    assert times == sorted(times)


def test_a_verdict_that_takes_longer_than_the_hold_does_not_hold_the_next_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following live, the next replay's start waits for a response's verdict at most `hold`
    seconds: past it, it goes out, and the response follows once decided (issue 31's
    latency over issue 40's order, where the analyzer is slow)."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    first = b.resume("one")
    b.history("one", 1)
    b.marker("one")
    path = b.write(tmp_path / "t.jsonl")
    clock = Clock()
    engine = Engine([str(path)], clock=clock, hold=0.2)
    engine.step()  # the first analysis runs now
    busy_until = clock.now + 100.0  # an analyzer too busy to judge the answer for a while
    due = engine.judge.due
    monkeypatch.setattr(engine.judge, "due", lambda now: now >= busy_until and due(now))
    done = len(b.lines)
    b.response(first, {}, dt=50)
    b.resume("two")
    b.history("two", 1)
    _grow(path, b.lines[done:])
    clock.now += 0.1
    assert [e["event"] for e in engine.step()] == []  # replay two waits for one's verdict
    clock.now += 0.5  # past the hold; the analyzer is still busy
    assert [e["event"] for e in engine.step()] == ["replay_started"]
    clock.now += 200.0
    assert "response" in [e["event"] for e in engine.step()]


def test_weight_findings_wait_for_their_window_and_come_once(tmp_path: Path) -> None:
    """A silence past a deadline is said once the replay is answered (it grows till then), at
    the deadline check names; lines over a limit once per side and limit, however many come."""
    b = TraceBuilder()
    rid = b.resume("s1")
    big = {"toolCallId": "t", "rawOutput": "x" * 70_000}
    b.update("s1", "tool_call_update", **big)
    b.update("s1", "user_message", dt=3_000, messageId="u", content=[])
    b.marker("s1")
    b.state("s1")
    head = len(b.lines)
    b.update("s1", "tool_call_update", dt=6_000, **big)  # silent 6 s, then a second big line
    b.response(rid, {})
    b.event("exit", code=0, signal=None)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    clock = Clock()
    engine = Engine([str(path)], clock=clock)
    _grow(path, b.lines[:head])
    first = _run(engine, clock)
    rules = [e["rule"] for e in first if e["event"] == "finding"]
    assert "silence-past-client-deadline" not in rules  # 3 s so far: not yet decided
    assert rules.count("frame-over-client-limit") == 1
    _grow(path, b.lines[head:])
    rest = _run(engine, clock)
    said = [e for e in first + rest if e["event"] == "finding"]
    whole = analyze(path).findings()
    weight = ("silence-past-client-deadline", "frame-over-client-limit")
    expected = sorted(r for r in whole.select("rule", "seq").rows() if r[0] in weight)
    assert sorted((e["rule"], e["seq"]) for e in said if e["rule"] in weight) == expected
    (silence,) = [e for e in said if e["rule"] == "silence-past-client-deadline"]
    assert "every 5 s" in silence["message"]  # 6 s: check's deadline, not the 2 s of 3 s
