"""`timeline --format json`: the records a person sees in the text timeline, as data: one
object per record (the trace's header left out), with `replay` true for a record inside a
replay window (from the replaying request to its response)."""

from __future__ import annotations

from typing import Any

import polars as pl

COLUMNS = (
    "trace", "seq", "t_ms", "src", "kind", "method", "id", "session", "update_kind",
    "update_class", "error_code", "latency_ms", "event", "text",
)  # fmt: skip


def timeline_rows(
    tl: pl.DataFrame, windows: list[Any], *, session: str | None = None, replays_only: bool = False
) -> pl.DataFrame:
    """The timeline's records as a table: `session` keeps that session's records and the
    agent's stderr lines inside its replay windows; `replays_only` those inside a window."""
    rows = tl.filter(pl.col("kind") != "header")
    inside: list[int] = []
    for w in windows:
        if not w.replaying:
            continue
        end = w.end_row if w.end_row is not None else rows["row"].max()
        span = rows.filter(pl.col("trace") == w.trace, pl.col("row").is_between(w.req_row, end))
        inside += span["row"].to_list()
    rows = rows.with_columns(pl.col("row").is_in(inside).alias("replay"))
    if session is not None:
        rows = rows.filter(
            (pl.col("session") == session) | ((pl.col("src") == "stderr") & pl.col("replay"))
        )
    if replays_only:
        rows = rows.filter(pl.col("replay"))
    return rows.select(*[c for c in COLUMNS if c in rows.columns], "replay")
