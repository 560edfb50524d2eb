"""The analyzer's windows handed to the weight pass (`acp_trace.weight`), and its fields as
columns aligned with the replays table (one row per replaying request and session)."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.analysis.replays import Facts, Window
from acp_trace.weight import FIELDS, ReplayWeight, SessionSpan, WeightOptions, WindowSpan, silences
from acp_trace.weight import replay_weights as weigh

BYTES_BY_KIND = pl.List(pl.Struct({"kind": pl.String, "bytes": pl.Int64}))
WEIGHT_SCHEMA: dict[str, Any] = {
    "bytes_by_kind": BYTES_BY_KIND,
    "largest_update_bytes": pl.Int64,
    "largest_update_kind": pl.String,
    "largest_update_seq": pl.Int64,
    "children_bytes": pl.Int64,
    "longest_silence_ms": pl.Float64,
    "quiet_end_ms": pl.Float64,
    "updates_after_quiet_end": pl.Int64,
}
assert tuple(WEIGHT_SCHEMA) == FIELDS


def window_span(w: Window) -> WindowSpan:
    """A replay pass window as the weight pass reads it."""
    end = w.end_row if w.end != "open" else None
    sessions = tuple(
        SessionSpan(s.session, s.parent, s.announce_row, s.marker_row) for s in w.sessions.values()
    )
    return WindowSpan(w.trace, w.req_row, end, w.end in ("response", "error"), sessions)


def replay_weights(
    tl: pl.DataFrame, facts: Facts, options: WeightOptions, lines: pl.DataFrame | None = None
) -> list[ReplayWeight]:
    """One ReplayWeight per row of the replays table, in its order (`lines`: the timeline's
    `weight.lines.line_rows`, when the caller has them)."""
    return weigh(tl, [window_span(w) for w in facts.windows if w.replaying], options, lines)


def weight_columns(found: list[ReplayWeight]) -> pl.DataFrame:
    """The weight fields as a frame aligned with the replays table."""
    return pl.DataFrame(
        [tuple(f[: len(FIELDS)]) for f in found], schema=WEIGHT_SCHEMA, orient="row"
    )


def new_session_windows(tl: pl.DataFrame) -> list[tuple[int, WindowSpan]]:
    """Each client `session/new` request's window (the row it starts at, its span)."""
    news = tl.filter(
        (pl.col("kind") == "request")
        & (pl.col("src") == "client")
        & (pl.col("method") == "session/new")
    ).select("row", "trace", "peer_row")
    kinds = tl["kind"]
    out = []
    for row, trace, peer in news.iter_rows():
        responded = peer is not None and kinds[peer] in ("response", "error")
        out.append((row, WindowSpan(trace, row, peer if responded else None, responded, ())))
    return out


def new_session_silences(
    tl: pl.DataFrame, lines: pl.DataFrame | None = None
) -> list[tuple[int, float | None]]:
    """The longest silence of each `session/new` window: (its request row, milliseconds)."""
    windows = new_session_windows(tl)
    if not windows:
        return []
    found = silences(tl, [w for _, w in windows], lines)
    return [(row, s) for (row, _), s in zip(windows, found, strict=True)]
