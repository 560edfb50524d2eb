"""Lines longer than a known client limit (rule `frame-over-client-limit`): per trace, side and
the largest limit each passes, how many, the first and the longest."""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from acp_trace.weight.lines import line_rows
from acp_trace.weight.options import Threshold, WeightOptions


class OverLimit(NamedTuple):
    """The lines of one side of one trace whose largest limit passed is `limit`."""

    trace: str
    side: str
    limit: Threshold
    lines: int
    first_row: int  # the earliest such line's timeline row
    first_bytes: int
    first_kind: str
    longest_bytes: int


def over_limits(
    tl: pl.DataFrame, options: WeightOptions, lines: pl.DataFrame | None = None
) -> list[OverLimit]:
    """Every (trace, side, largest limit passed) with its lines, in trace order, then side,
    then limit."""
    if not options.limits:
        return []
    heads = (line_rows(tl) if lines is None else lines).filter(pl.col("head"))
    smallest = options.limits[0].value
    heads = heads.filter(pl.col("line_bytes") > smallest)
    if heads.is_empty():
        return []
    values = pl.Series([float(t.value) for t in options.limits], dtype=pl.Float64)
    # the index of the largest limit each line is longer than
    index = values.search_sorted(heads["line_bytes"].cast(pl.Float64), side="left")
    heads = heads.with_columns((index.cast(pl.Int64) - 1).alias("limit"))
    grouped = (
        heads.sort("row")
        .group_by("trace", "src", "limit", maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("row").first().alias("first_row"),
            pl.col("line_bytes").first().alias("first_bytes"),
            pl.col("kind").first().alias("first_kind"),
            pl.col("line_bytes").max().alias("longest_bytes"),
        )
        .with_columns(pl.col("first_row").min().over("trace").alias("trace_first"))
        .sort("trace_first", "src", "limit", maintain_order=True)
    )
    return [
        OverLimit(t, side, options.limits[i], n, row, first, kind, longest)
        for t, side, i, n, row, first, kind, longest, _ in grouped.iter_rows()
    ]
