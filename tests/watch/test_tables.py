"""watch.tables.Synced: a DataTable brought to a new list of rows shows exactly those rows,
changing cells in place, taking rows off the front and adding at the end, and rebuilding
only when the order changed."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from acp_trace.watch.tables import Synced, same_text


def _rows(*spec: tuple[str, str]) -> list[tuple[str, list[Text]]]:
    return [(key, [Text(key), Text(value)]) for key, value in spec]


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable(id="t")


def _shown(table: DataTable[Any]) -> list[tuple[str, str, str]]:
    out = []
    for r in range(table.row_count):
        key = table.coordinate_to_cell_key(Coordinate(r, 0)).row_key.value
        a, b = table.get_row_at(r)
        out.append((str(key), str(a), str(b)))
    return out


def test_rows_change_in_place_leave_at_the_front_and_arrive_at_the_end() -> None:
    async def main() -> None:
        app = _One()
        async with app.run_test() as pilot:
            table = app.query_one("#t", DataTable)
            table.add_columns("key", "value")
            synced = Synced(table)
            steps = [
                _rows(("a", "1"), ("b", "1")),
                _rows(("a", "1"), ("b", "2"), ("c", "1")),  # a count grows, a row arrives
                _rows(("b", "2"), ("c", "1"), ("d", "1")),  # the oldest folds away
                _rows(("c", "1"), ("d", "7")),
                _rows(),
                _rows(("x", "1")),
            ]
            edits = []
            for rows in steps:
                before = synced.edits
                synced.sync(rows)
                await pilot.pause()
                assert _shown(table) == [(k, str(c[0]), str(c[1])) for k, c in rows]
                edits.append(synced.edits - before)
            assert synced.rebuilds == 1  # every row left: one clear, not a removal each
            assert edits == [2, 2, 2, 2, 0, 1]  # only what changed: never every cell
            synced.sync(_rows(("x", "1"), ("y", "1"), ("z", "1")))
            synced.sync(_rows(("x", "1"), ("z", "1"), ("y", "1")))  # another order: built again
            await pilot.pause()
            assert synced.rebuilds == 2
            assert _shown(table) == [("x", "x", "1"), ("z", "z", "1"), ("y", "y", "1")]

    asyncio.run(main())


def test_same_text_sees_a_change_of_style() -> None:
    assert same_text(Text("a", style="red"), Text("a", style="red"))
    assert not same_text(Text("a", style="red"), Text("a", style="green"))
    assert not same_text(Text("a"), Text("b"))
    assert not same_text(None, Text("a"))
