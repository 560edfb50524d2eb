"""Latency: request-to-response statistics and prompt-turn phases.

A prompt turn runs from the `session/prompt` request to its v1 response, or to the v2 idle
`state_update` that ends it (a resume's state snapshot is not a turn end). Its phases: the first
agent chunk, the acceptance signal (claude-agent-acp's session-materialization update), the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from acp_trace.analysis.replays import Facts
from acp_trace.jsonrpc import ACCEPTANCE_META_KEY, as_str, loads

AGENT_OUTPUT_KINDS = (
    "agent_message_chunk",
    "agent_message",
    "agent_thought_chunk",
    "agent_thought",
)
GROUPS = {
    "method": ["method"],
    "agent": ["agent", "agent_version", "method"],
    "trace": ["trace", "method"],
}


def request_latency(tl: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """Request-to-response statistics per method (and agent or trace): count, errors, p50..max."""
    return aggregate_requests(request_rows(tl), by)


def request_rows(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per request: trace, agent, agent_version, method, latency_ms and how it was
    answered (`answer`: response, error, or null when unanswered)."""
    requests = tl.filter(pl.col("kind") == "request")
    answers = tl.select(pl.col("row").alias("peer_row"), pl.col("kind").alias("answer"))
    joined = requests.join(answers, on="peer_row", how="left")
    return joined.select("trace", "agent", "agent_version", "method", "latency_ms", "answer")


def aggregate_requests(rows: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """The statistics of `request_latency` from `request_rows` (of one trace or of many)."""
    keys = GROUPS[by]
    lat = pl.col("latency_ms")
    return (
        rows.group_by(keys)
        .agg(
            pl.len().alias("count"),
            (pl.col("answer") == "error").sum().alias("errors"),
            pl.col("answer").is_null().sum().alias("unanswered"),
            lat.quantile(0.5, "linear").alias("p50_ms"),
            lat.quantile(0.9, "linear").alias("p90_ms"),
            lat.quantile(0.99, "linear").alias("p99_ms"),
            lat.max().alias("max_ms"),
        )
        .sort(keys)
    )


@dataclass
class Turn:
    """One prompt turn and the rows that mark its phases."""

    trace: str
    session: str
    protocol: int | None
    req_row: int
    first_chunk_row: int | None = None
    acceptance_rows: list[int] = field(default_factory=list)
    end_row: int | None = None
    response_row: int | None = None
    stop_reason: str | None = None
    cancelled_with_uuid: bool = False


@dataclass
class TurnFacts:
    """All prompt turns of a timeline plus acceptance updates that came outside any turn."""

    turns: list[Turn] = field(default_factory=list)
    stray_acceptances: list[tuple[str, str, int]] = field(default_factory=list)
    acceptance_info: list[tuple[str, str, int]] = field(default_factory=list)


def collect_turns(tl: pl.DataFrame, facts: Facts) -> TurnFacts:
    """Follow every prompt turn of every trace through its updates and response."""
    out = TurnFacts()
    resume_spans = _resume_spans(facts)
    cols = ("row", "trace", "src", "kind", "session", "update_kind", "peer_row", "protocol")
    rows = (
        tl.lazy()  # narrow columns first: filtering the whole table would copy every message
        .filter(
            (pl.col("method") == "session/prompt")
            | (pl.col("request_method") == "session/prompt")
            | pl.col("update_kind").is_in(
                [*AGENT_OUTPUT_KINDS, "session_info_update", "state_update"]
            )
        )
        .filter(pl.col("session").is_not_null())
        .select(cols)
        .collect()
    )
    msgs = tl["msg"]
    open_turns: dict[tuple[str, str], Turn] = {}
    by_req: dict[int, Turn] = {}
    for row, trace, src, kind, session, uk, peer, protocol in rows.iter_rows():
        key = (trace, session)
        if kind == "request" and src == "client":
            turn = Turn(trace, session, protocol, row)
            open_turns[key] = turn
            by_req[row] = turn
            out.turns.append(turn)
        elif kind in ("response", "error") and peer in by_req:
            _answer(by_req[peer], row, kind, msgs, open_turns)
        elif kind == "notification" and src == "agent":
            _turn_update(out, open_turns, key, row, uk, msgs, resume_spans)
    return out


def _answer(
    turn: Turn, row: int, kind: str, msgs: pl.Series, open_turns: dict[tuple[str, str], Turn]
) -> None:
    turn.response_row = row
    key = (turn.trace, turn.session)
    if turn.protocol != 2 or kind == "error":
        turn.end_row = row
        result = loads(msgs[row]).get("result")
        if isinstance(result, dict):
            turn.stop_reason = as_str(result.get("stopReason"))
            turn.cancelled_with_uuid = _cancelled_with_uuid(result)
        if open_turns.get(key) is turn:
            del open_turns[key]


def _turn_update(
    out: TurnFacts,
    open_turns: dict[tuple[str, str], Turn],
    key: tuple[str, str],
    row: int,
    uk: str,
    msgs: pl.Series,
    resume_spans: dict[tuple[str, str], list[tuple[int, int]]],
) -> None:
    turn = open_turns.get(key)
    if uk in AGENT_OUTPUT_KINDS:
        if turn is not None and turn.first_chunk_row is None:
            turn.first_chunk_row = row
        return
    update = _update(msgs[row])
    if uk == "session_info_update":
        if not is_acceptance(update):
            return
        if "title" in update or "updatedAt" in update:
            out.acceptance_info.append((key[0], key[1], row))
        if turn is None:
            out.stray_acceptances.append((key[0], key[1], row))
        else:
            turn.acceptance_rows.append(row)
        return
    idle = update.get("state") == "idle"
    if turn is None or not idle or _inside(resume_spans.get(key, []), row):
        return
    turn.end_row = row
    turn.stop_reason = as_str(update.get("stopReason"))
    turn.cancelled_with_uuid = _cancelled_with_uuid(update)
    del open_turns[key]


def is_acceptance(update: dict[str, Any]) -> bool:
    """The session-materialization `accepted` signal of claude-agent-acp (protocol-notes.md)."""
    meta = update.get("_meta")
    value = meta.get(ACCEPTANCE_META_KEY) if isinstance(meta, dict) else None
    return isinstance(value, dict) and value.get("state") == "accepted"


def _cancelled_with_uuid(holder: dict[str, Any]) -> bool:
    if holder.get("stopReason") != "cancelled":
        return False
    meta = holder.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    return isinstance(claude, dict) and "assistantMessageUuid" in claude


def _update(text: str | None) -> dict[str, Any]:
    msg = loads(text) if text else {}
    params = msg.get("params") if isinstance(msg, dict) else None
    update = params.get("update") if isinstance(params, dict) else None
    return update if isinstance(update, dict) else {}


def _resume_spans(facts: Facts) -> dict[tuple[str, str], list[tuple[int, int]]]:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for w in facts.windows:
        if w.method == "session/resume":
            end = w.end_row if w.end_row is not None else 2**62
            spans.setdefault((w.trace, w.session), []).append((w.req_row, end))
    return spans


def _inside(spans: list[tuple[int, int]], row: int) -> bool:
    return any(start < row < end for start, end in spans)


TURN_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "session": pl.String,
    "agent": pl.String,
    "agent_version": pl.String,
    "protocol": pl.Int64,
    "request_seq": pl.Int64,
    "first_chunk_ms": pl.Float64,
    "acceptance_ms": pl.Float64,
    "end_ms": pl.Float64,
    "response_ms": pl.Float64,
    "stop_reason": pl.String,
}


def turns_table(tl: pl.DataFrame, turns: TurnFacts) -> pl.DataFrame:
    """One row per prompt turn: request to first agent chunk, to acceptance, to the end."""
    t_ms, seqs = tl["t_ms"], tl["seq"]
    agents = {
        t: (a, v)
        for t, a, v in tl.select("trace", "agent", "agent_version").unique("trace").iter_rows()
    }

    def since(turn: Turn, row: int | None) -> float | None:
        if row is None or t_ms[row] is None or t_ms[turn.req_row] is None:
            return None
        return float(t_ms[row] - t_ms[turn.req_row])

    rows = [
        (
            t.trace,
            t.session,
            *agents.get(t.trace, (None, None)),
            t.protocol,
            seqs[t.req_row],
            since(t, t.first_chunk_row),
            since(t, t.acceptance_rows[0] if t.acceptance_rows else None),
            since(t, t.end_row),
            since(t, t.response_row),
            t.stop_reason,
        )
        for t in turns.turns
    ]
    return pl.DataFrame(rows, schema=TURN_SCHEMA, orient="row")


def turn_phases(turns: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """p50/p90/p99/max of each prompt-turn phase, grouped like request_latency."""
    keys = [k for k in GROUPS[by] if k != "method"]
    phases = ["first_chunk_ms", "acceptance_ms", "end_ms"]
    long = turns.unpivot(
        index=[*keys, "trace"] if "trace" not in keys else keys,
        on=phases,
        variable_name="phase",
        value_name="ms",
    )
    group = [*keys, "phase"]
    return (
        long.group_by(group)
        .agg(
            pl.col("ms").count().alias("count"),
            pl.col("ms").quantile(0.5, "linear").alias("p50_ms"),
            pl.col("ms").quantile(0.9, "linear").alias("p90_ms"),
            pl.col("ms").quantile(0.99, "linear").alias("p99_ms"),
            pl.col("ms").max().alias("max_ms"),
        )
        .sort(group)
    )
