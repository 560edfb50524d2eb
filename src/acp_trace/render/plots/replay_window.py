"""Which replay the replay chart draws, and what it draws of it: the window's sessions as lanes
and the agent's updates and requests on them, timed from the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from acp_trace.analysis.phases import stderr_between
from acp_trace.analysis.replays import Facts, Window
from acp_trace.errors import UsageError
from acp_trace.jsonrpc import BLOCKING_AGENT_REQUESTS, id_key
from acp_trace.quantities import count

ZOOM_BELOW = 0.25  # add a zoom on the updates when they fill less than this of the window
MAX_CHOICES = 10  # values listed when a selector matches nothing


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

    def selectors(self) -> list[tuple[str, str]]:
        """The options that are set, as (name, value), in the order trace, session, request."""
        given = (("trace", self.trace), ("session", self.session), ("request", self.request))
        return [(name, value) for name, value in given if value is not None]

    def describe(self, upto: str | None = None) -> str:
        """`trace X and session Y` (only the options before `upto`, when given)."""
        parts = []
        for name, value in self.selectors():
            if name == upto:
                break
            parts.append(f"{name} {value}")
        return " and ".join(parts)


def choose_window(
    facts: Facts, tl: pl.DataFrame, untimed: Sequence[str] = (), pick: Pick = Pick()
) -> tuple[Window | None, int]:
    """The slowest replaying request (largest response time) among those `pick` matches, and
    the count of candidates. Windows of ordering-only traces are never chosen.

    No replay at all gives `(None, 0)`; a `pick` that matches none is a UsageError that names
    the selector and lists the values it could take."""
    t_ms = tl["t_ms"]
    timed = [
        w
        for w in facts.windows
        if w.replaying and w.trace not in untimed and t_ms[w.req_row] is not None
    ]
    chosen = [w for w in timed if pick.matches(w)]
    if pick.chosen and not chosen:
        raise UsageError(no_match(pick, timed, [w for w in facts.windows if w.replaying]))
    best: tuple[float, Window] | None = None
    for w in chosen:
        end = t_ms[w.end_row] if w.end_row is not None else None
        took = end - t_ms[w.req_row] if end is not None else -1.0
        if best is None or took > best[0]:
            best = (took, w)
    return (best[1] if best else None), len(chosen)


def no_match(pick: Pick, timed: list[Window], replaying: list[Window]) -> str:
    """Why `pick` matches no timed replay: the first selector that rules out every one, and
    the values it could take among the replays the selectors before it leave."""
    pool, untimed = timed, [w for w in replaying if w not in timed]
    for option, value in pick.selectors():
        step = Pick(**{option: value})
        kept = [w for w in pool if step.matches(w)]
        if kept:
            pool, untimed = kept, [w for w in untimed if step.matches(w)]
            continue
        where = "" if pool is timed else " among the replays of " + pick.describe(upto=option)
        if any(step.matches(w) for w in untimed):
            return (
                f"--{option} {value}: its replays are in ordering-only traces (no timestamps)"
                f"{where}; the replay chart needs times"
            )
        if not replaying:
            return f"--{option} {value}: there is no replay to choose from"
        if not pool:
            return f"--{option} {value}: there is no replay with timestamps to choose from"
        return f"--{option} {value}: no such {option}{where}; {choices(option, pool)}"
    return "no replay matches " + pick.describe()  # unreachable: some selector rules all out


def choices(option: str, windows: list[Window]) -> str:
    """`expected one of: a, b, c` (at most `MAX_CHOICES`, then how many more)."""
    values: dict[str, None] = {}
    for w in windows:
        if option == "trace":
            values[Path(w.trace).name] = None
        elif option == "session":
            values.update(dict.fromkeys(w.sessions))
        else:
            values[str(w.request_id)] = None
    names = list(values)
    shown = ", ".join(names[:MAX_CHOICES])
    more = f" and {count(len(names) - MAX_CHOICES)} more" if len(names) > MAX_CHOICES else ""
    return f"expected one of: {shown}{more}"


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


@dataclass(frozen=True)
class Lane:
    """One row of the replay chart. Kind `session`: a session's updates and requests (`key`
    is its id); kind `stderr`: the agent's stderr lines in the window and the phases they
    name (replay_stderr.py). A new kind of row is a kind here, its rows added by `lanes_of`,
    and its name and drawer in `replay.LANE_KINDS`."""

    kind: str
    key: str
    y: int


@dataclass
class View:
    """What one replay chart draws."""

    tl: pl.DataFrame
    w: Window
    lanes: list[Lane]  # top to bottom
    events: pl.DataFrame
    end: float | None  # the response (or connection end), ms after the request
    stderr: pl.DataFrame  # the agent's stderr lines in the window (window_stderr)

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
        history = self.events.filter(pl.col("cls").is_in(["history", "marker", "vendor"]))[
            "t"
        ].max()
        for last in (everything, history):
            if isinstance(last, float) and 0 < last < ZOOM_BELOW * self.end:
                return last * 1.1
        return None


def lanes_of(w: Window, stderr_lines: int = 0) -> list[Lane]:
    """The rows, top to bottom: the resumed session, then its children in order of
    announcement, then (when the agent wrote any in the window) its stderr."""
    children = sorted(
        (s for s in w.sessions.values() if s.parent is not None),
        key=lambda s: s.announce_row or 0,
    )
    order = [w.session, *(c.session for c in children)]
    lanes = [Lane("session", name, -index) for index, name in enumerate(order)]
    if stderr_lines:
        lanes.append(Lane("stderr", "agent stderr", -len(order)))
    return lanes


def window_stderr(tl: pl.DataFrame, w: Window) -> pl.DataFrame:
    """The agent's stderr lines after the request and before the response (or the end of the
    trace), with the phases they name (`phases.stderr_between`), `t` in ms after the request;
    lines without a time are left out (an ordering-only trace is never drawn)."""
    lines = stderr_between(tl, w.trace, w.req_row, w.end_row)
    start = tl["t_ms"][w.req_row]
    return lines.filter(pl.col("t_ms").is_not_null()).with_columns(
        (pl.col("t_ms") - start).alias("t")
    )
