"""Bringing a Textual `DataTable` to a new list of rows by changing only what changed, and a
table that paints again only the cells that changed.

The screen redraws ten times a second while records stream in; clearing a table and adding
every row again each time makes Textual lay out and paint the whole screen at every tick.
`sync` instead removes the rows that left (a timeline folds its oldest rows), rewrites only
the cells whose text changed (a growing update count), appends the new rows, and rebuilds
the table only when the order changed (a filter, another session) or when many rows leave
at once (one clear, not a removal each: each moves every row below it).

`LiveTable` is the `DataTable` the screen uses: Textual keys its cache of painted cells with
the table's update count, which every edit bumps, so one growing count (the running replay's
updates, a streaming message's row) made it paint every visible cell of the table again at
every tick; it paints a cell again only when the cell (its `Text`), its place or its look
changed. It overrides `DataTable._render_cell` and reads the table's own row and column
maps: internals of the pinned Textual (pyproject.toml), which
`tests/watch/test_screen_bounded.py` checks by counting the cells painted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.widgets import DataTable

Rows = Sequence[tuple[str, list[Text]]]
PAINTED_KEPT = 1024  # cells a LiveTable keeps painted (a 160 x 50 screen shows about 250)


class LiveTable(DataTable[Text]):
    """A DataTable that paints a cell again only when it changed (see the module)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.painted: LRUCache[tuple[object, ...], tuple[object, SegmentLines]] = LRUCache(
            PAINTED_KEPT
        )
        self.paints = 0  # cells painted (a test's figure)
        # Textual's own cache of cells is keyed by the update count: its entries are never
        # hit again after an edit, and 10,000 of them only make the garbage collector slower
        self._cell_render_cache = LRUCache(PAINTED_KEPT // 4)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        if row_index < 0 or column_index < 0:  # the header, row labels: Textual's own way
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        cell = self._data.get(row_key, {}).get(column_key)
        key = (
            id(cell),
            row_index,
            column_index,
            base_style,
            width,
            cursor,
            hover,
            self._show_hover_cursor,
            self._pseudo_class_state,
            self.rows[row_key].height,
        )
        hit = self.painted.get(key)
        if hit is not None and hit[0] is cell:
            return hit[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        # a cell gone whose id this one took: Textual's cache keeps a key's first value
        self.painted.discard(key)
        self.painted[key] = (cell, lines)
        self.paints += 1
        return lines

    def widen(self) -> None:
        """Measure the columns of the cells updated wider now: Textual does it when the
        table is next idle, which a table that receives no message (nobody touches the
        keys) never is, and the wider value stayed cut (`3.…`) until a key was pressed."""
        if self._updated_cells:
            cells, self._updated_cells = set(self._updated_cells), set()
            self._update_column_widths(cells)
            self.refresh()


class Synced:
    """One table and the rows it shows (keys unique within the table)."""

    def __init__(self, table: DataTable[Any]) -> None:
        self.table = table
        self.shown: list[tuple[str, list[Text]]] = []
        self.rebuilds = 0  # how often the table was cleared and filled again
        self.edits = 0  # cells rewritten in place, rows added or removed

    def sync(self, rows: Rows) -> None:
        """Make the table show `rows`, in order."""
        keys = [key for key, _ in rows]
        old = [key for key, _ in self.shown]
        cut = _front_cut(old, keys)
        if cut is None or (cut and cut == len(old)) or cut > max(8, len(old) // 8):
            # nothing kept, or many rows leave: one clear, not a removal each
            self._rebuild(rows)
            return
        table = self.table
        for key in old[:cut]:
            table.remove_row(key)
            self.edits += 1
        kept = self.shown[cut:]
        widths = [column.content_width for column in table.columns.values()]
        widened = False
        for i, ((_key, was), (_new, cells)) in enumerate(zip(kept, rows, strict=False)):
            for j, (a, b) in enumerate(zip(was, cells, strict=True)):
                if not same_text(a, b):
                    # a value wider than its column widens it: never shown cut (`unmark…`)
                    wider = j < len(widths) and b.cell_len > widths[j]
                    table.update_cell_at(Coordinate(i, j), b, update_width=wider)
                    widened |= wider
                    self.edits += 1
        if widened and isinstance(table, LiveTable):
            table.widen()
        for key, cells in rows[len(kept) :]:
            table.add_row(*cells, key=key)
            self.edits += 1
        self.shown = list(rows)

    def _rebuild(self, rows: Rows) -> None:
        self.table.clear()
        for key, cells in rows:
            self.table.add_row(*cells, key=key)
        self.shown = list(rows)
        self.rebuilds += 1


def _front_cut(old: list[str], new: list[str]) -> int | None:
    """How many rows to take off the front of `old` so that what is left starts `new`
    (rows only ever leave at the front and arrive at the end); None when it does not."""
    if not old:
        return 0
    cut = old.index(new[0]) if new and new[0] in old else len(old)
    rest = old[cut:]
    if len(rest) > len(new) or new[: len(rest)] != rest:
        return None
    return cut


def same_text(a: Text | None, b: Text) -> bool:
    """The same characters in the same styles."""
    if a is b:
        return True
    return a is not None and a.plain == b.plain and a.style == b.style and a.spans == b.spans
