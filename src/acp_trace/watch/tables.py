"""Bringing a Textual `DataTable` to a new list of rows by changing only what changed.

The screen redraws ten times a second while records stream in; clearing a table and adding
every row again each time makes Textual lay out and paint the whole screen at every tick.
`sync` instead removes the rows that left (a timeline folds its oldest rows), rewrites only
the cells whose text changed (a growing update count), appends the new rows, and rebuilds
the table only when the order changed (a filter, another session).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

Rows = Sequence[tuple[str, list[Text]]]


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
        if cut is None or (cut and cut == len(old)):  # nothing kept: one clear, not N removals
            self._rebuild(rows)
            return
        table = self.table
        for key in old[:cut]:
            table.remove_row(key)
            self.edits += 1
        kept = self.shown[cut:]
        for i, ((_key, was), (_new, cells)) in enumerate(zip(kept, rows, strict=False)):
            for j, (a, b) in enumerate(zip(was, cells, strict=True)):
                if not same_text(a, b):
                    table.update_cell_at(Coordinate(i, j), b)
                    self.edits += 1
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
    return a is not None and a.plain == b.plain and a.style == b.style and a.spans == b.spans
