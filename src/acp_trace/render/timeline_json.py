"""`timeline --format json`: the records a person sees in the text timeline, as data (the
trace's header left out), with `replay` true for a record inside a replay window (from the
replaying request to its response).

The document is one object of columns, `{"trace": [...], "seq": [...], ...}`, a list per
column with one value per record, so that `pl.read_json` loads it whatever the rows hold
(`.explode(pl.all())` gives a row per record): an array of row objects does not load once a
column is null in its first 100 rows and set later (an `error_code`, an `event`). Each column
holds one type; `id` is the JSON-RPC id's JSON text (`"5"`, `"\\"orphan-1\\""`), so a string
id `"1"` and a number 1 stay apart and an integer beyond 64 bits stays exact."""

from __future__ import annotations

from typing import Any

import polars as pl

COLUMNS = (
    "trace", "seq", "t_ms", "src", "kind", "method", "id", "session", "update_kind",
    "update_class", "error_code", "latency_ms", "event", "text",
)  # fmt: skip


def timeline_document(rows: pl.DataFrame) -> dict[str, list[Any]]:
    """The rows of `timeline_rows` as the JSON document: a list per column, floats rounded."""
    from acp_trace.render.report.formats import rounded

    table = rounded(rows)
    return {name: table[name].to_list() for name in table.columns}


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
