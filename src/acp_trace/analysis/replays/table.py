"""The public replays table: one row per replaying request and session (rules.md fields)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from acp_trace.analysis.columns import values_at
from acp_trace.analysis.replays.model import Facts, SessionStats, Window
from acp_trace.jsonrpc import INVALID_PARAMS

REPLAY_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "session": pl.String,
    "parent_session": pl.String,
    "request_id": pl.String,
    "method": pl.String,
    "protocol": pl.Int64,
    "agent": pl.String,
    "agent_version": pl.String,
    "outcome": pl.String,
    "first_update_ms": pl.Float64,
    "marker_ms": pl.Float64,
    "last_history_ms": pl.Float64,
    "state_ms": pl.Float64,
    "response_ms": pl.Float64,
    "marker_to_response_ms": pl.Float64,
    "last_history_to_response_ms": pl.Float64,
    "vendor_marker_ms": pl.Float64,
    "gap_ms": pl.Float64,
    "gap_source": pl.String,
    "history_updates": pl.Int64,
    "history_bytes": pl.Int64,
    "live_updates": pl.Int64,
}


def outcome(w: Window, stats: SessionStats) -> str:
    """The outcome of a replaying request for one session (rules.md)."""
    marked = stats.marker_row is not None
    if w.end == "open":
        return "open"
    if w.method == "session/load":
        return "v1_loaded" if w.succeeded else "v1_failed"
    if w.succeeded:
        return "complete" if marked else "unmarked"
    if marked:
        return "complete_failed"
    if w.end == "error" and w.error_code == INVALID_PARAMS:
        return "rejected"
    return "truncated"


def replays_table(tl: pl.DataFrame, facts: Facts) -> pl.DataFrame:
    """One row per replaying request and session, children included (rules.md fields)."""
    agents = tl.select("trace", "agent", "agent_version").unique("trace")
    info = {t: (a, v) for t, a, v in agents.iter_rows()}
    windows = [w for w in facts.windows if w.replaying]
    t_ms = values_at(tl["t_ms"], _rows_timed(windows))
    rows = []
    for w in windows:
        for stats in w.sessions.values():
            rows.append(_replay_row(w, stats, t_ms, info.get(w.trace, (None, None))))
    return pl.DataFrame(rows, schema=REPLAY_SCHEMA, orient="row")


def _rows_timed(windows: list[Window]) -> Iterator[int | None]:
    """The rows whose times the replays table shows."""
    for w in windows:
        yield w.req_row
        yield w.end_row
        for s in w.sessions.values():
            yield from (s.marker_row, s.last_history_row, s.first_update_row, s.state_row)
            yield s.vendor_row


def _replay_row(
    w: Window,
    stats: SessionStats,
    t_ms: dict[int, Any],
    agent: tuple[str | None, str | None],
) -> tuple[Any, ...]:
    def at(row: int | None) -> float | None:
        if row is None:
            return None
        start, value = t_ms.get(w.req_row), t_ms.get(row)
        return None if start is None or value is None else value - start

    response = w.end_row if w.end in ("response", "error") else None
    marker = stats.marker_row
    response_ms, marker_ms, last_ms = at(response), at(marker), at(stats.last_history_row)
    origin, source = stats.gap_origin()
    gap_ms = _diff(response_ms, at(origin))
    return (
        w.trace,
        stats.session,
        stats.parent,
        w.request_id,
        w.method,
        w.protocol,
        agent[0],
        agent[1],
        outcome(w, stats),
        at(stats.first_update_row),
        marker_ms,
        last_ms,
        at(stats.state_row),
        response_ms,
        _diff(response_ms, marker_ms),
        _diff(response_ms, last_ms),
        at(stats.vendor_row),
        gap_ms,
        source if gap_ms is not None else None,
        stats.history_updates,
        stats.history_bytes,
        stats.live_updates,
    )


def _diff(later: float | None, earlier: float | None) -> float | None:
    return None if later is None or earlier is None else later - earlier
