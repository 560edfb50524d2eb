"""The analyzer's windows and turns handed to the fidelity pass (`acp_trace.fidelity`), and its
fields as columns aligned with the replays table (one row per replaying request and session)."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.analysis.columns import values_at
from acp_trace.analysis.replays import Facts
from acp_trace.analysis.turns import TurnFacts
from acp_trace.fidelity import FIELDS, NewSession, ReplayFidelity, ReplaySpan, TurnSpan, compare
from acp_trace.jsonrpc import as_dict, loads_exact

FIDELITY_SCHEMA: dict[str, Any] = {
    "source": pl.String,
    "source_complete": pl.Boolean,
    "source_messages": pl.Int64,
    "replay_missing": pl.Int64,
    "replay_extra": pl.Int64,
    "replay_duplicated": pl.Int64,
    "replay_id_changed": pl.Int64,
    "replay_reordered": pl.Int64,
    "replay_truncated": pl.Int64,
    "replay_truncated_bytes": pl.Int64,
}
assert tuple(FIDELITY_SCHEMA) == FIELDS


def replay_fidelity(
    tl: pl.DataFrame,
    facts: Facts,
    turns: TurnFacts,
    headers: dict[str, dict[str, Any]],
    *,
    per_trace: bool = False,
    native: bool = True,
) -> list[ReplayFidelity]:
    """One `ReplayFidelity` per row of the replays table, in its order. Sources are looked for
    over every trace (rules.md), or, with `per_trace`, in the replay's own trace only (a row
    that depends on its trace alone: the dataset's exactly-once rows). `native=False`: every
    replay through the Python path (the reference the native path is tested against)."""
    order = recording_order(headers, tl)
    agents = agent_names(tl)
    spans = list(_replay_spans(facts, order, agents))
    turn_spans = list(_turn_spans(tl, turns, order, agents))
    made = _new_sessions(tl, order, agents)
    rows = [s.req_row for s in spans] + [t.req_row for t in turn_spans]
    seq_of = values_at(tl["seq"], iter(rows))
    if not per_trace:
        return compare(tl, spans, turn_spans, made, seq_of, native=native)
    out: dict[int, ReplayFidelity] = {}
    for trace in order:
        mine = [i for i, s in enumerate(spans) if s.trace == trace]
        if not mine:
            continue
        alone = [t for t in turn_spans if t.trace == trace]
        news = [n for n in made if n.order == order[trace]]
        found = compare(tl, [spans[i] for i in mine], alone, news, seq_of, native=native)
        out.update(zip(mine, found, strict=True))
    return [out[i] for i in range(len(spans))]


def linked_sessions(tl: pl.DataFrame, facts: Facts, turns: TurnFacts) -> pl.DataFrame:
    """Per trace, the sessions a source search links across traces: those replayed, prompted
    or made by `session/new` there (`trace`, `session`). The fleet uses it to find replays
    whose source lies in another partition."""
    pairs = {(s.trace, s.session) for s in _replay_spans(facts, {})}
    pairs |= {(t.trace, t.session) for t in turns.turns}
    pairs |= {(t, s) for _, t, s in _made(tl)}
    return pl.DataFrame(
        sorted(pairs), schema={"trace": pl.String, "session": pl.String}, orient="row"
    )


def replay_spans(a: Any) -> list[ReplaySpan]:
    """The replay spans of an Analysis, in the order of its replays table."""
    order = recording_order(a.headers, a.timeline)
    return list(_replay_spans(a.facts, order, agent_names(a.timeline)))


def fidelity_columns(found: list[ReplayFidelity], height: int) -> pl.DataFrame:
    """The fidelity fields as a frame aligned with the replays table (`height` rows; all null
    when the pass did not run: `found` empty)."""
    if not found:
        return pl.DataFrame(schema=FIDELITY_SCHEMA).clear(height)
    return pl.DataFrame(
        [tuple(getattr(f, name) for name in FIELDS) for f in found],
        schema=FIDELITY_SCHEMA,
        orient="row",
    )


def recording_order(headers: dict[str, dict[str, Any]], tl: pl.DataFrame) -> dict[str, int]:
    """Each trace's place: by its header's `started_at`, then by path (rules.md)."""
    traces = tl["trace"].unique(maintain_order=True).to_list()

    def key(trace: str) -> tuple[str, str]:
        started = headers.get(trace, {}).get("started_at")
        return (started if isinstance(started, str) else "", trace)

    return {t: i for i, t in enumerate(sorted(traces, key=key))}


def agent_names(tl: pl.DataFrame) -> dict[str, str | None]:
    """Each trace's agent name (from its initialize exchange)."""
    return dict(tl.select("trace", "agent").unique("trace").iter_rows())


def _replay_spans(
    facts: Facts, order: dict[str, int], agents: dict[str, str | None] | None = None
) -> Any:
    for w in facts.windows:
        if not w.replaying:
            continue
        end = w.end_row if w.end != "open" else None
        for stats in w.sessions.values():
            stop = stats.marker_row if stats.marker_row is not None else end
            place, agent = order.get(w.trace, 0), (agents or {}).get(w.trace)
            yield ReplaySpan(
                w.trace, place, stats.session, w.req_row, stop, end, w.v2, w.succeeded, agent
            )


def _turn_spans(
    tl: pl.DataFrame, turns: TurnFacts, order: dict[str, int], agents: dict[str, str | None]
) -> Any:
    msgs, seqs = tl["msg"], tl["seq"]
    for t in turns.turns:
        v2 = t.protocol == 2
        end = t.end_row if t.end_row is not None else t.open_until
        prompt = as_dict(_params(msgs[t.req_row])).get("prompt")
        message_id = None
        if v2 and t.response_row is not None:
            message_id = as_dict(_result(msgs[t.response_row])).get("messageId")
        yield TurnSpan(
            t.trace,
            order[t.trace],
            t.session,
            t.req_row,
            end,
            v2,
            prompt,
            message_id,
            seqs[t.req_row],
            agents.get(t.trace),
        )


def _new_sessions(
    tl: pl.DataFrame, order: dict[str, int], agents: dict[str, str | None]
) -> list[NewSession]:
    made = _made(tl)
    return [
        NewSession(session, order[trace], row, agents.get(trace)) for row, trace, session in made
    ]


def _made(tl: pl.DataFrame) -> list[tuple[int, str, str]]:
    """(row, trace, session) of each successful `session/new` response."""
    made = tl.filter(
        (pl.col("kind") == "response") & (pl.col("request_method") == "session/new")
    ).select("row", "trace", "msg")
    out = []
    for row, trace, msg in made.iter_rows():
        session = as_dict(_result(msg)).get("sessionId")
        if isinstance(session, str):
            out.append((row, trace, session))
    return out


def _params(msg: str | None) -> Any:
    return _part(msg, "params")


def _result(msg: str | None) -> Any:
    return _part(msg, "result")


def _part(msg: str | None, name: str) -> Any:
    try:
        return as_dict(loads_exact(msg or "")).get(name)
    except ValueError:
        return None
