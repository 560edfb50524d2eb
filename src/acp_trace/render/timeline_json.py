"""`timeline --format json`: the records a person sees in the text timeline, as data (the
trace's header left out), with `replay` true for a record inside a replay window (from the
replaying request to its response).

The document is one object of columns, `{"trace": [...], "seq": [...], ...}`, a list per
column with one value per record, so that `pl.read_json` loads it whatever the rows hold
(`.explode(pl.all())` gives a row per record): an array of row objects does not load once a
column is null in its first 100 rows and set later (an `error_code`, an `event`). Each column
holds one type; `id` is the JSON-RPC id's JSON text (`"5"`, `"\\"orphan-1\\""`), so a string
id `"1"` and a number 1 stay apart and an integer beyond 64 bits stays exact.

The weight pass's marks (render/timeline_weight.py) are columns too, null where there is none:
`line_bytes` and `limit_passed` (the largest client limit the line is longer than),
`silence_ms`, `silence_from_seq` and `deadline_passed` (a silence of the agent past a client
deadline that this record ends)."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.render.timeline_weight import NONE, WeightMarks

COLUMNS = (
    "trace", "seq", "t_ms", "src", "kind", "method", "id", "session", "update_kind",
    "update_class", "error_code", "latency_ms", "event", "text",
)  # fmt: skip
MARK_COLUMNS = ("line_bytes", "limit_passed", "silence_ms", "silence_from_seq", "deadline_passed")


def timeline_document(rows: pl.DataFrame) -> dict[str, list[Any]]:
    """The rows of `timeline_rows` as the JSON document: a list per column, floats rounded."""
    from acp_trace.render.report.formats import rounded

    table = rounded(rows)
    return {name: table[name].to_list() for name in table.columns}


def timeline_rows(
    tl: pl.DataFrame,
    windows: list[Any],
    *,
    session: str | None = None,
    replays_only: bool = False,
    marks: WeightMarks = NONE,
) -> pl.DataFrame:
    """The timeline's records as a table: `session` keeps that session's records and the
    agent's stderr lines inside its replay windows; `replays_only` those inside a window;
    `marks` fill the MARK_COLUMNS."""
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
    rows = rows.select("row", *[c for c in COLUMNS if c in rows.columns], "replay")
    return with_marks(rows, marks).drop("row")


def with_marks(rows: pl.DataFrame, marks: WeightMarks) -> pl.DataFrame:
    """`rows` (with their timeline `row`) with the MARK_COLUMNS."""
    over = [(r, n, lim.name) for r, (n, lim) in marks.over.items()]
    quiet = [(r, s.ms, s.since_seq, s.deadline.name) for r, s in marks.silences.items()]
    row = rows.schema["row"]
    lines = pl.DataFrame(
        over, schema=[("row", row), ("line_bytes", pl.Int64), ("limit_passed", pl.String)],
        orient="row",
    )  # fmt: skip
    silences = pl.DataFrame(
        quiet,
        schema=[("row", row), ("silence_ms", pl.Float64), ("silence_from_seq", pl.Int64),
                ("deadline_passed", pl.String)],
        orient="row",
    )  # fmt: skip
    joined = rows.join(lines, on="row", how="left", maintain_order="left")
    return joined.join(silences, on="row", how="left", maintain_order="left")
