"""The agent's stdout records inside a span, read from the timeline a slice at a time (the
timeline's `row` is its position: a span is a range of rows, and a slice copies nothing)."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from acp_trace.fidelity.messages import FIDELITY_KINDS, Update

_WANTED = pl.col("update_kind").is_in(list(FIDELITY_KINDS)).fill_null(False)
_AGENT = (pl.col("src") == "agent") & pl.col("kind").is_in(
    ["request", "response", "error", "notification"]
)


class AgentRows:
    """The records of the agent's stdout (responses, requests, notifications) of a timeline,
    with the message text only for the updates fidelity reads (`FIDELITY_KINDS`)."""

    def __init__(self, tl: pl.DataFrame) -> None:
        self.tl = tl

    def between(self, trace: str, start_row: int, stop_row: int | None) -> Iterator[Update]:
        """The records of `trace` after `start_row` and before `stop_row` (None: to the end)."""
        end = self.tl.height if stop_row is None else min(stop_row, self.tl.height)
        if end <= start_row + 1:
            return
        part = (
            self.tl.slice(start_row + 1, end - start_row - 1)
            .lazy()
            .filter(_AGENT & (pl.col("trace") == trace))
            .select(
                "row",
                "seq",
                "session",
                pl.when(_WANTED).then(pl.col("update_kind")).alias("kind"),
                pl.when(_WANTED).then(pl.col("msg")).alias("msg"),
            )
            .collect()
        )
        yield from map(Update._make, part.iter_rows())
