"""Numbers and words in text tables, and floats in JSON and CSV: the precision of the data."""

from __future__ import annotations

import orjson
import polars as pl
import pytest
from rich.cells import cell_len

from acp_trace.quantities import counted as plural
from acp_trace.quantities import ms
from acp_trace.render.report.formats import DECIMALS, frame, rounded
from acp_trace.render.report.tables import replays_view, shorten, table, to_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (0.000412, "0.000"),
        (0.4123, "0.412"),
        (3.05, "3.05"),
        (9.999, "10.00"),
        (87.32291099999998, "87.3"),
        (1652.3, "1,652.3"),
        (19019.5, "19,019.5"),
        (-2.5, "-2.50"),
    ],
)
def test_ms_keeps_three_or_four_significant_digits(value: float, text: str) -> None:
    """Milliseconds in a table: three decimals below 1, two below 10, one above."""
    assert ms(value) == text


@pytest.mark.parametrize(
    ("count", "noun", "text"),
    [
        (0, "replay", "0 replays"),
        (1, "replay", "1 replay"),
        (2, "session", "2 sessions"),
        (1, "gap", "1 gap"),
        (19019, "history update", "19,019 history updates"),
    ],
)
def test_plural(count: int, noun: str, text: str) -> None:
    """Counts read right: 1 replay, 2 replays, 0 replays."""
    assert plural(count, noun) == text


def test_json_and_csv_round_floats_to_the_nanosecond() -> None:
    """87.32291099999998 ms is 87.322911 in JSON and CSV; lists of floats too; ints untouched."""
    df = pl.DataFrame(
        {"t_ms": [87.32291099999998, None], "n": [3, 4], "xs": [[0.1 + 0.2, 1.0], []]}
    )
    rows = orjson.loads(frame(df, "json"))
    assert rows == [{"t_ms": 87.322911, "n": 3, "xs": [0.3, 1.0]}, {"t_ms": None, "n": 4, "xs": []}]
    assert frame(df, "csv").splitlines() == ["t_ms,n", "87.322911,3", ",4"]
    assert rounded(df)["t_ms"][0] == round(87.32291099999998, DECIMALS)


def test_a_table_fits_by_shortening_the_long_columns() -> None:
    """Long ids are shortened in the middle with an ellipsis, on one line, so every line
    fits; numbers keep their width; with no width every value is whole."""
    session = "0198c0de-0000-7000-8000-" + "x" * 40 + "-tail"
    df = pl.DataFrame({"session": [session, "short"], "response_ms": [1234.5, 2.0]})
    text = to_text(table(df, fold=("session",), width=40), 40)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 40 and len(lines) == 5  # 2 header lines, rule, 2 rows
    row = lines[3].split()
    assert row[0].startswith("0198") and row[0].endswith("x-tail") and "…" in row[0]
    assert row[1] == "1,234.5"
    wide = to_text(table(df, fold=("session",)))
    assert len(wide.splitlines()) == 4  # header, rule, a line per row
    assert session in wide and "…" not in wide


@pytest.mark.parametrize(
    ("text", "size", "expected"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdefghij", 7, "ab…ghij"),
        ("@agentclientprotocol/claude-agent-acp", 16, "@agen…-agent-acp"),
        ("日本語のセッション", 9, "日…ション"),  # wide characters take two cells
    ],
)
def test_shorten_keeps_both_ends_in_the_cells_given(text: str, size: int, expected: str) -> None:
    """`shorten` cuts in the middle, the end getting the larger part, counting terminal cells."""
    assert shorten(text, size) == expected
    assert cell_len(shorten(text, size)) <= size


def test_replays_view_sorts_slowest_first_and_keeps_a_request_together() -> None:
    """Rows by response time, slowest first, no response last; a request's rows in order;
    `gap_ms` as the table has it."""
    replays = pl.DataFrame(
        {
            "trace": ["t"] * 4,
            "request_id": ["1", "1", "2", "3"],
            "session": ["a", "a-child", "b", "c"],
            "response_ms": [10.0, 10.0, None, 50.0],
            "marker_to_response_ms": [1.0, 2.0, None, None],
            "last_history_to_response_ms": [3.0, 4.0, None, 7.0],
            "gap_ms": [1.0, 2.0, None, 7.0],  # the replays table's own
        }
    )
    view = replays_view(replays)
    assert view["session"].to_list() == ["c", "a", "a-child", "b"]
    assert view["gap_ms"].to_list() == [7.0, 1.0, 2.0, None]
