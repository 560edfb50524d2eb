"""Which replay the replay chart draws, and what it draws of it: the window's sessions as lanes
and the agent's updates and requests on them, timed from the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from acp_trace.analysis.replays import Facts, Window
from acp_trace.jsonrpc import BLOCKING_AGENT_REQUESTS, id_key
from acp_trace.render.plots._common import label

ZOOM_BELOW = 0.25  # add a zoom on the updates when they fill less than this of the window


@dataclass(frozen=True)
class Pick:
    """Which replays may be drawn: by session (the resumed one or a child), by request id (as
    written in the trace: `3` or `"abc"`, or the string without quotes), by trace (its path or
    file name). Unset fields match everything."""

    session: str | None = None
    request: str | None = None
    trace: str | None = None

    def matches(self, w: Window) -> bool:
        if self.session is not None and self.session not in w.sessions:
            return False
        if self.request is not None and w.request_id not in (self.request, id_key(self.request)):
            return False
        return self.trace is None or self.trace in (w.trace, Path(w.trace).name)

    @property
    def chosen(self) -> bool:
        return any(v is not None for v in (self.session, self.request, self.trace))

    def describe(self) -> str:
        parts = [
            f"{name} {label(value)}"
            for name, value in (
                ("trace", self.trace),
                ("session", self.session),
                ("request", self.request),
            )
            if value is not None
        ]
        return " and ".join(parts)


def choose_window(
    facts: Facts, tl: pl.DataFrame, untimed: Sequence[str] = (), pick: Pick = Pick()
) -> tuple[Window | None, int]:
    """The slowest replaying request (largest response time) among those `pick` matches, and
    the count of candidates. Windows of ordering-only traces are never chosen."""
    t_ms = tl["t_ms"]
    best: tuple[float, Window] | None = None
    count = 0
    for w in facts.windows:
        if not w.replaying or w.trace in untimed or t_ms[w.req_row] is None or not pick.matches(w):
            continue
        count += 1
        end = t_ms[w.end_row] if w.end_row is not None else None
        took = end - t_ms[w.req_row] if end is not None else -1.0
        if best is None or took > best[0]:
            best = (took, w)
    return (best[1] if best else None), count


def window_events(tl: pl.DataFrame, w: Window) -> pl.DataFrame:
    """The agent's updates and requests on the window's sessions: session, t (ms since the
    request), cls (history, live, state, marker, unknown or request)."""
    start = tl["t_ms"][w.req_row]
    rows = tl.filter(
        pl.col("trace") == w.trace,
        pl.col("row") > w.req_row,
        pl.col("row") < (w.end_row if w.end_row is not None else tl.height),
        pl.col("src") == "agent",
        pl.col("session").is_in(list(w.sessions)),
    )
    update = pl.col("method") == "session/update"
    agent_request = (pl.col("kind") == "request") & pl.col("method").is_in(
        sorted(BLOCKING_AGENT_REQUESTS)
    )
    return rows.filter(update | agent_request).select(
        "session",
        (pl.col("t_ms") - start).alias("t"),
        pl.when(agent_request)
        .then(pl.lit("request"))
        .when(pl.col("update_kind") == "state_update")
        .then(pl.lit("state"))
        .otherwise(pl.col("update_class"))
        .alias("cls"),
    )


@dataclass
class View:
    """What one replay chart draws."""

    tl: pl.DataFrame
    w: Window
    lanes: dict[str, int]  # session -> y
    events: pl.DataFrame
    end: float | None  # the response (or connection end), ms after the request

    def at(self, row: int | None) -> float | None:
        t_ms = self.tl["t_ms"]
        if row is None or t_ms[row] is None:
            return None
        return float(t_ms[row] - t_ms[self.w.req_row])

    def zoom(self) -> float | None:
        """The end of a zoom panel on the updates when they fill under a quarter of the
        window: all of them if they fit, else the replayed history (up to the marker)."""
        if self.end is None or self.end <= 0:
            return None
        everything = self.events["t"].max()
        history = self.events.filter(pl.col("cls").is_in(["history", "marker"]))["t"].max()
        for last in (everything, history):
            if isinstance(last, float) and 0 < last < ZOOM_BELOW * self.end:
                return last * 1.1
        return None


def lanes_of(w: Window) -> dict[str, int]:
    """Lane of each session: the resumed session first, children in order of announcement."""
    children = sorted(
        (s for s in w.sessions.values() if s.parent is not None),
        key=lambda s: s.announce_row or 0,
    )
    order = [w.session, *(c.session for c in children)]
    return {name: -index for index, name in enumerate(order)}
