"""The turn pass: prompt turns, their first chunk, acceptance and end, found with the agent's
chunks folded in polars exactly as a walk over every row finds them."""

from __future__ import annotations

import random
from dataclasses import astuple
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from acp_trace import analyze
from acp_trace.analysis.latency import AGENT_OUTPUT_KINDS, Turn, TurnFacts, collect_turns
from acp_trace.jsonrpc import ACCEPTANCE_META_KEY, as_str, loads
from tracebuilder import TraceBuilder

ACCEPTED = {"_meta": {ACCEPTANCE_META_KEY: {"state": "accepted"}}}
UUID = {"_meta": {"claudeCode": {"assistantMessageUuid": "u"}}}


def _turns(b: TraceBuilder, tmp_path: Path) -> TurnFacts:
    a = analyze(b.write(tmp_path / "t.jsonl"))
    return a.turn_facts


def _rows(tmp_path: Path, b: TraceBuilder) -> dict[int, int]:
    """seq -> timeline row."""
    a = analyze(tmp_path / "t.jsonl")
    return dict(zip(a.timeline["seq"], a.timeline["row"], strict=True))


def test_a_v2_turn_from_prompt_to_idle_state(tmp_path: Path) -> None:
    """A v2 turn: its first chunk (not one before the prompt, nor the thought after it), its
    acceptance, its end at the idle state with the stop reason; the response ends nothing."""
    b = TraceBuilder(protocol=2)
    b.update("s", "agent_message_chunk")  # before the prompt: no turn's
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.update("s", "session_info_update", **ACCEPTED)
    b.response(rid, {})
    first = b.update("s", "agent_thought_chunk")
    b.update("s", "agent_message_chunk")
    b.state("s", "running")
    end = b.state("s", "idle", stopReason="end_turn")
    b.update("s", "agent_message_chunk")  # after the end
    facts = _turns(b, tmp_path)
    rows = _rows(tmp_path, b)
    (turn,) = facts.turns
    assert turn.first_chunk_row == rows[first]
    assert turn.end_row == rows[end] and turn.stop_reason == "end_turn"
    assert len(turn.acceptance_rows) == 1 and not facts.stray_acceptances
    assert not turn.cancelled_with_uuid


def test_a_v1_turn_ends_at_its_response(tmp_path: Path) -> None:
    """v1: the response ends the turn with `result.stopReason`; a cancelled one naming an
    assistantMessageUuid says so."""
    b = TraceBuilder(protocol=1)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.update("s", "agent_message_chunk")
    end = b.response(rid, {"stopReason": "cancelled", **UUID})
    facts = _turns(b, tmp_path)
    (turn,) = facts.turns
    assert turn.end_row == _rows(tmp_path, b)[end]
    assert turn.stop_reason == "cancelled" and turn.cancelled_with_uuid


def test_a_second_prompt_takes_the_chunks_of_its_session(tmp_path: Path) -> None:
    """A prompt on a session with an open turn replaces it: later chunks are the new turn's;
    another session's chunks are its own."""
    b = TraceBuilder(protocol=2)
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    other = b.request("session/prompt", {"sessionId": "t", "prompt": []})
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    chunk = b.update("s", "agent_message_chunk")
    t_chunk = b.update("t", "agent_message_chunk")
    b.response(other, {})
    facts = _turns(b, tmp_path)
    rows = _rows(tmp_path, b)
    first, t_turn, second = facts.turns
    assert first.first_chunk_row is None and first.open_until == second.req_row
    assert second.first_chunk_row == rows[chunk]
    assert t_turn.first_chunk_row == rows[t_chunk]


def test_idle_inside_a_resume_window_is_no_turn_end(tmp_path: Path) -> None:
    """The state snapshot of a resume is not the end of the turn under way."""
    b = TraceBuilder(protocol=2)
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    rid = b.resume("s")
    b.state("s", "idle")
    b.marker("s")
    b.response(rid, {})
    end = b.state("s", "idle", stopReason="cancelled", **UUID)
    facts = _turns(b, tmp_path)
    (turn,) = facts.turns
    assert turn.end_row == _rows(tmp_path, b)[end] and turn.cancelled_with_uuid


def test_acceptances_outside_a_turn_and_with_a_title(tmp_path: Path) -> None:
    """An acceptance with no turn open is stray; one with a title carries info; an update of
    `session_info_update` without the signal is none."""
    b = TraceBuilder(protocol=2)
    stray = b.update("s", "session_info_update", **ACCEPTED)
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.update("s", "session_info_update", title="x")
    info = b.update("s", "session_info_update", title="t", **ACCEPTED)
    facts = _turns(b, tmp_path)
    rows = _rows(tmp_path, b)
    assert [r for *_, r in facts.stray_acceptances] == [rows[stray]]
    assert [r for *_, r in facts.acceptance_info] == [rows[info]]
    assert facts.turns[0].acceptance_rows == [rows[info]]


def _gemini_prompt_then_load(protocol: int) -> tuple[TraceBuilder, int]:
    """gemini-cli's shape: a load whose response comes after its first replayed update and the
    rest after it; a prompt with no output (v1: never answered; v2: answered, no idle state);
    60 s later the client loads the session again (v2: resumes it) and it is replayed. Returns
    the builder and the seq of a real output chunk after that replay."""
    b = TraceBuilder(protocol=protocol, agent="gemini-cli")
    text = {"type": "text", "text": "answer 0: 0"}
    first = b.load("s") if protocol == 1 else b.resume("s")
    b.update("s", "user_message_chunk", content={"type": "text", "text": "question 0"})
    b.response(first, {})
    b.update("s", "agent_message_chunk", content=text)  # after the response: no window's
    prompt = b.request("session/prompt", {"sessionId": "s", "prompt": [text]})
    if protocol == 2:
        b.response(prompt, {"stopReason": "end_turn"})
    again = b.load("s", dt=60_000) if protocol == 1 else b.resume("s", dt=60_000)
    b.update("s", "user_message_chunk", dt=62, content={"type": "text", "text": "question 0"})
    b.update("s", "agent_message_chunk", content=text)
    b.update("t", "agent_message_chunk", content=text)  # another session: not this turn's
    b.response(again, {})
    return b, b.update("s", "agent_message_chunk", content=text)


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_replay_during_a_turn_is_not_its_first_output(tmp_path: Path, protocol: int) -> None:
    """A turn with no output of its own has no first chunk in the replay of a later load or
    resume of its session (issue 40: 60,063 ms, the next resume's replay); its first chunk is
    the first one outside every replay window."""
    b, later = _gemini_prompt_then_load(protocol)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    (turn,) = a.turn_facts.turns
    assert turn.first_chunk_row == _rows(tmp_path, b)[later]
    row = b.lines.pop()  # without the chunk after the replay: no output at all
    assert b"agent_message_chunk" in row
    a = analyze(b.write(tmp_path / "t.jsonl"))
    assert a.turns["first_chunk_ms"].to_list() == [None]


def test_a_chunk_after_the_turn_ends_is_not_its_first_output(tmp_path: Path) -> None:
    """A v1 turn answered without output keeps a null first chunk: a load's late update after
    the response is not the turn's."""
    b = TraceBuilder(protocol=1, agent="gemini-cli")
    prompt = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(prompt, {"stopReason": "end_turn"})
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    b.response(rid, {})
    b.update("s", "agent_message_chunk")  # the load's late history, after the turn's end
    a = analyze(b.write(tmp_path / "t.jsonl"))
    assert a.turns["first_chunk_ms"].to_list() == [None]


# ---------------------------------------------------------------- against a walk of every row


def _walk(tl: pl.DataFrame, facts: Any) -> TurnFacts:
    """The turn pass as it was: a walk over every row, chunks included, parsing each state
    update and response (the reference the folded pass must equal)."""
    out = TurnFacts()
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    replays: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for w in facts.windows:
        end = w.end_row if w.end_row is not None else 2**62
        if w.method == "session/resume":
            spans.setdefault((w.trace, w.session), []).append((w.req_row, end))
        for stats in w.sessions.values() if w.replaying else ():
            start = w.req_row if stats.announce_row is None else stats.announce_row
            replays.setdefault((w.trace, stats.session), []).append((start, end))
    rows = tl.filter(
        (pl.col("method") == "session/prompt")
        | (pl.col("request_method") == "session/prompt")
        | pl.col("update_kind").is_in([*AGENT_OUTPUT_KINDS, "session_info_update", "state_update"])
    ).filter(pl.col("session").is_not_null())
    open_turns: dict[tuple[str, str], Turn] = {}
    by_req: dict[int, Turn] = {}
    cols = ("row", "trace", "src", "kind", "session", "update_kind", "peer_row", "protocol", "msg")
    for row, trace, src, kind, session, uk, peer, protocol, msg in rows.select(cols).iter_rows():
        key = (trace, session)
        if kind == "request" and src == "client":
            if key in open_turns:
                open_turns[key].open_until = row
            turn = Turn(trace, session, protocol, row)
            open_turns[key] = by_req[row] = turn
            out.turns.append(turn)
        elif kind in ("response", "error") and peer in by_req:
            turn = by_req[peer]
            turn.response_row = row
            if turn.protocol != 2 or kind == "error":
                turn.end_row = row
                result = loads(msg).get("result")
                if isinstance(result, dict):
                    turn.stop_reason = as_str(result.get("stopReason"))
                    turn.cancelled_with_uuid = _cancelled(result)
                if open_turns.get(key) is turn:
                    del open_turns[key]
                    turn.open_until = row
        elif kind == "notification" and src == "agent":
            turn = open_turns.get(key)
            if uk in AGENT_OUTPUT_KINDS:
                replayed = any(a < row < b for a, b in replays.get(key, []))
                if turn is not None and turn.first_chunk_row is None and not replayed:
                    turn.first_chunk_row = row
                continue
            params = loads(msg).get("params")
            update = params.get("update") if isinstance(params, dict) else None
            update = update if isinstance(update, dict) else {}
            if uk == "session_info_update":
                meta = update.get("_meta")
                value = meta.get(ACCEPTANCE_META_KEY) if isinstance(meta, dict) else None
                if not (isinstance(value, dict) and value.get("state") == "accepted"):
                    continue
                if "title" in update or "updatedAt" in update:
                    out.acceptance_info.append((trace, session, row))
                if turn is None:
                    out.stray_acceptances.append((trace, session, row))
                else:
                    turn.acceptance_rows.append(row)
                continue
            inside = any(a < row < b for a, b in spans.get(key, []))
            if turn is None or update.get("state") != "idle" or inside:
                continue
            turn.end_row = row
            turn.stop_reason = as_str(update.get("stopReason"))
            turn.cancelled_with_uuid = _cancelled(update)
            del open_turns[key]
            turn.open_until = row
    return out


def _cancelled(holder: dict[str, Any]) -> bool:
    meta = holder.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    return (
        holder.get("stopReason") == "cancelled"
        and isinstance(claude, dict)
        and "assistantMessageUuid" in claude
    )


def _random_trace(rng: random.Random) -> TraceBuilder:
    b = TraceBuilder(protocol=rng.choice([1, 2, 2, None]))
    pending: list[Any] = []
    kinds = [*AGENT_OUTPUT_KINDS, "tool_call", "plan", "user_message_chunk"]
    for _ in range(rng.randint(5, 150)):
        s = rng.choice(["s1", "s1", "s2", "c1"])
        op = rng.random()
        if op < 0.12:
            pending.append(b.request("session/prompt", {"sessionId": s, "prompt": []}))
        elif op < 0.16:
            pending.append(b.resume(s) if rng.random() < 0.5 else b.load(s))
        elif op < 0.3 and pending:
            rid = pending.pop(rng.randrange(len(pending)))
            stop = rng.choice([{"stopReason": "end_turn"}, {"stopReason": "cancelled", **UUID}, {}])
            if rng.random() < 0.8:
                b.response(rid, rng.choice([stop, stop, None]))
            else:
                b.error(rid, -32603)
        elif op < 0.75:
            b.update(s, rng.choice(kinds))
        elif op < 0.85:
            extra = rng.choice(
                [{}, {"stopReason": "end_turn"}, {"stopReason": "cancelled", **UUID}]
            )
            b.state(s, rng.choice(["idle", "idle", "running"]), **extra)
        elif op < 0.93:
            fields = rng.choice([ACCEPTED, {**ACCEPTED, "title": "t"}, {"title": "t"}, {}])
            b.update(s, "session_info_update", **fields)
        elif op < 0.96:
            b.marker(s)
        else:
            b.update(s, "subagent_update", sessionId=rng.choice(["c1", "c2"]))
            b.update(rng.choice(["c1", "c2"]), rng.choice(AGENT_OUTPUT_KINDS))
    return b


@pytest.mark.parametrize("seed", range(60))
def test_the_folded_pass_equals_a_walk_of_every_row(tmp_path: Path, seed: int) -> None:
    """On random traces of prompts, chunks, states, acceptances, resumes and answers, the pass
    finds what a walk of every row finds, turn for turn."""
    a = analyze(_random_trace(random.Random(seed)).write(tmp_path / "t.jsonl"))
    got = collect_turns(a.timeline, a.facts)
    want = _walk(a.timeline, a.facts)
    assert [astuple(t) for t in got.turns] == [astuple(t) for t in want.turns]
    assert got.stray_acceptances == want.stray_acceptances
    assert got.acceptance_info == want.acceptance_info


@pytest.mark.parametrize("seed", range(10))
def test_a_hash_collision_of_sessions_costs_time_not_a_wrong_chunk(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every (trace, session) given the same key (every hash collides), the first chunks
    are still those a walk of every row finds: the check sends the join back to the strings."""
    from acp_trace.analysis import turns

    monkeypatch.setattr(turns, "_KEY", pl.lit(0, pl.UInt64).alias("key"))
    a = analyze(_random_trace(random.Random(seed)).write(tmp_path / "t.jsonl"))
    got = collect_turns(a.timeline, a.facts)
    want = _walk(a.timeline, a.facts)
    assert [astuple(t) for t in got.turns] == [astuple(t) for t in want.turns]


def _turn_rows(*turns: tuple[float | None, float | None, float]) -> pl.DataFrame:
    """A turns table of one agent: (first_chunk_ms, acceptance_ms, end_ms) per turn."""
    from acp_trace.analysis.latency import TURN_SCHEMA

    rows = [
        ("t", "s", "agent", "1.0", 2, i, first, accepted, end, end, "end_turn")
        for i, (first, accepted, end) in enumerate(turns)
    ]
    return pl.DataFrame(rows, schema=TURN_SCHEMA, orient="row")


@pytest.mark.parametrize("by", ["method", "agent", "trace"])
def test_turn_phases_are_in_the_order_they_happen_in_a_turn(by: str) -> None:
    """Four quick turns with no chunk and one slow turn whose acceptance then first chunk come
    long after the quick ends: the rows are acceptance, first chunk, end (the order inside a
    turn), not by p50 (which puts the end, 1 ms, before the chunk, 100 ms)."""
    from acp_trace.analysis.latency import turn_phases

    turns = _turn_rows(*[(None, None, 1.0)] * 4, (100.0, 50.0, 101.0))
    phases = turn_phases(turns, by)
    assert phases["phase"].to_list() == ["acceptance_ms", "first_chunk_ms", "end_ms"]
    assert phases["count"].to_list() == [1, 1, 5]
