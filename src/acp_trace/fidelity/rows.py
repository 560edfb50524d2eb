"""The agent's stdout records of a timeline, narrowed once, and the ones inside a span."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

import polars as pl

from acp_trace.fidelity.messages import FIDELITY_KINDS, Update

_COLUMNS = ("row", "trace", "seq", "session", "update_kind", "msg")


class AgentRows:
    """The agent's stdout records (responses, requests, notifications) in row order, with the
    message text kept only for the updates fidelity reads (`FIDELITY_KINDS`)."""

    def __init__(self, tl: pl.DataFrame) -> None:
        agent = tl.lazy().filter(
            (pl.col("src") == "agent")
            & pl.col("kind").is_in(["request", "response", "error", "notification"])
        )
        wanted = pl.col("update_kind").is_in(list(FIDELITY_KINDS)).fill_null(False)
        frame = (
            agent.select(
                "row",
                "trace",
                "seq",
                "session",
                pl.when(wanted).then(pl.col("update_kind")).alias("update_kind"),
                pl.when(wanted).then(pl.col("msg")).alias("msg"),
            )
            .sort("row")
            .collect()
        )
        self.rows: list[int] = frame["row"].to_list()
        self._frame = frame.select(_COLUMNS)

    def between(self, trace: str, start_row: int, stop_row: int | None) -> Iterator[Update]:
        """The records of `trace` after `start_row` and before `stop_row` (None: to the end)."""
        lo = bisect_right(self.rows, start_row)
        hi = len(self.rows) if stop_row is None else bisect_left(self.rows, stop_row)
        if hi <= lo:
            return
        part = self._frame.slice(lo, hi - lo)
        for row, tr, seq, session, kind, msg in part.iter_rows():
            if tr == trace:
                yield Update(row, seq, session, kind, msg)
