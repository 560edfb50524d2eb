"""Taking table values into Python a column at a time gives what polars' row access gives."""

from __future__ import annotations

import polars as pl
import pytest

from acp_trace.analysis import columns
from acp_trace.analysis.columns import named_rows, values_at

FRAME = pl.DataFrame(
    {
        "row": [0, 1, 2, 3, 4],
        "text": ["a", None, "\u00e9", "", "z"],
        "t_ms": [1.5, None, 3.0, -0.0, 2.0**60],
        "flag": [True, None, False, True, None],
        "rows": [[1, 2], [], None, [3], [4]],
        "big": [2**63 - 1, -(2**63), 0, None, 7],
    }
)


@pytest.mark.parametrize("slice_rows", [1, 2, 5, 50_000])
def test_named_rows_are_the_rows_polars_gives(
    monkeypatch: pytest.MonkeyPatch, slice_rows: int
) -> None:
    """Every type the passes read, nulls, and slices that end on and off the last row."""
    monkeypatch.setattr(columns, "SLICE_ROWS", slice_rows)
    assert list(named_rows(FRAME)) == list(FRAME.iter_rows(named=True))
    assert list(named_rows(FRAME.clear())) == []


def test_values_at_takes_the_rows_asked_for() -> None:
    """Repeated rows and None positions; nothing asked, nothing taken."""
    assert values_at(FRAME["t_ms"], [4, None, 0, 4, 1]) == {0: 1.5, 1: None, 4: 2.0**60}
    assert values_at(FRAME["t_ms"], [None]) == {}
