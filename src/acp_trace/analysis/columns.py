"""Taking a table's values into Python a column at a time: polars builds a row's tuple (and
`iter_rows(named=True)` a dict from it) cell by cell, several times slower than `to_list` of
each column; and one `Series[i]` costs a call into polars per value."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import polars as pl

SLICE_ROWS = 50_000  # rows taken into Python at a time: memory stays bounded


def named_rows(frame: pl.DataFrame) -> Iterator[dict[str, Any]]:
    """The rows of `frame` as dicts, in order: what `iter_rows(named=True)` gives."""
    names = frame.columns
    for start in range(0, frame.height, SLICE_ROWS):
        part = frame.slice(start, SLICE_ROWS)
        for values in zip(*(column.to_list() for column in part.get_columns()), strict=True):
            yield dict(zip(names, values, strict=True))


def values_at(column: pl.Series, rows: Iterable[int | None]) -> dict[int, Any]:
    """The values of `column` at the given row positions (None positions left out)."""
    wanted = sorted({row for row in rows if row is not None})
    if not wanted:
        return {}
    return dict(zip(wanted, column.gather(wanted).to_list(), strict=True))
