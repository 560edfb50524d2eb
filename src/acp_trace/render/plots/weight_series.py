"""What the weight chart draws of one replay, as arrays of bounded size: the history's bytes
accumulating per update kind (and the covered children's) sampled on at most `POINTS` times,
each line's length (the longest per time bin once there are more than `POINTS`), the lines over
a limit, and the moments to mark. A replay of 200,000 updates costs the same artists as one of
2,000."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from acp_trace.analysis.replays import Window
from acp_trace.weight import ReplayWeight, Threshold, WeightOptions
from acp_trace.weight.lines import line_rows

POINTS = 1500  # samples of a curve, and line lengths drawn, at most
KINDS_SHOWN = 7  # update kinds with a band of their own; the rest are one band
CHILDREN = "covered children"
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Band:
    """One band of the stack: its name, its total bytes, its top-minus-bottom on the grid."""

    name: str
    total: int
    updates: int
    values: Floats


@dataclass(frozen=True)
class Over:
    """A line longer than a limit: when (ms after the request), how long, the largest limit
    it passes, its kind and timeline row."""

    t: float
    length: int
    limit: Threshold
    kind: str
    row: int


@dataclass(frozen=True)
class Series:
    """The weight chart's data for one window."""

    grid: Floats  # ms after the request, ascending
    bands: list[Band]  # largest first, the children last
    line_t: Floats  # line lengths to draw (all, or the longest per time bin)
    line_bytes: Floats
    lines: int  # lines in the window on its sessions
    over: list[Over]  # the first line over each limit passed, by limit
    over_count: int  # lines over any limit
    over_t: Floats  # lines over a limit to draw (all, or the longest per bin)
    over_bytes: Floats
    right: float  # the x axis's end: the response, else the last line


def window_lines(tl: pl.DataFrame, w: Window) -> pl.DataFrame:
    """The agent's lines on the window's sessions after its request, up to and with its
    response (or to the trace's end): `row`, `t` (ms after the request, never going back),
    `session`, `kind`, `bytes`, `line_bytes`, `head`, `history`."""
    t0 = tl["t_ms"][w.req_row]
    end = w.end_row if w.end_row is not None else tl.height
    rows = line_rows(tl.slice(w.req_row, end - w.req_row + 1)).filter(
        pl.col("trace") == w.trace,
        pl.col("src") == "agent",
        pl.col("row") > w.req_row,
        pl.col("session").is_in(list(w.sessions)),
        pl.col("t_ms").is_not_null(),
    )
    return rows.select(
        "row",
        (pl.col("t_ms") - t0).cum_max().alias("t"),
        "session",
        "kind",
        "bytes",
        "line_bytes",
        "head",
        "history",
    )


def counted_history(lines: pl.DataFrame, w: Window) -> pl.DataFrame:
    """The history updates the weight fields count: each session's from its announcement
    (the request for the resumed one) up to its marker in the window."""
    keep = pl.lit(False)
    for s in w.sessions.values():
        start = s.announce_row if s.announce_row is not None else w.req_row
        stop = s.marker_row if s.marker_row is not None else np.iinfo(np.int64).max
        keep = keep | (
            (pl.col("session") == s.session) & (pl.col("row") > start) & (pl.col("row") < stop)
        )
    return lines.filter(pl.col("history") & keep)


def series(
    tl: pl.DataFrame, w: Window, weight: ReplayWeight, options: WeightOptions, end: float | None
) -> Series:
    """The chart's data; `end` is the response (or the connection's end), ms after the
    request."""
    lines = window_lines(tl, w)
    last = lines["t"].max()
    right = max(end or 0.0, float(last) if isinstance(last, float) else 0.0, 1.0)
    history = counted_history(lines, w)
    t = history["t"].to_numpy().astype(np.float64)
    grid = np.unique(t) if len(np.unique(t)) <= POINTS else np.linspace(0.0, right, POINTS)
    grid = np.concatenate(([0.0], grid, [right]))
    heads = lines.filter(pl.col("head"))
    ht = heads["t"].to_numpy().astype(np.float64)
    hb = heads["line_bytes"].to_numpy().astype(np.float64)
    over, over_mask = _over(heads, options)
    line_t, line_b = thinned(ht, hb, right)
    over_t, over_b = thinned(ht[over_mask], hb[over_mask], right)
    return Series(
        grid, _bands(history, w, grid), line_t, line_b, heads.height, over,
        int(over_mask.sum()), over_t, over_b, right,
    )  # fmt: skip


def _bands(history: pl.DataFrame, w: Window, grid: Floats) -> list[Band]:
    """The resumed session's history per kind (the KINDS_SHOWN largest, the rest as one), then
    the covered children's, each as its cumulative bytes on `grid`."""
    own = history.filter(pl.col("session") == w.session)
    totals = (
        own.group_by("kind")
        .agg(pl.col("bytes").sum(), pl.len().alias("n"))
        .sort(["bytes", "kind"], descending=[True, False])
    )
    names = totals["kind"].to_list()
    shown = names if len(names) <= KINDS_SHOWN + 1 else names[:KINDS_SHOWN]
    rest = [k for k in names if k not in set(shown)]
    bands = [_band(k, own.filter(pl.col("kind") == k), grid) for k in shown]
    if rest:
        label = f"{len(rest):,} other kinds"
        bands.append(_band(label, own.filter(pl.col("kind").is_in(rest)), grid))
    children = history.filter(pl.col("session") != w.session)
    if children.height:
        bands.append(_band(CHILDREN, children, grid))
    return bands


def _band(name: str, rows: pl.DataFrame, grid: Floats) -> Band:
    t = rows["t"].to_numpy().astype(np.float64)
    cum = np.cumsum(rows["bytes"].to_numpy().astype(np.float64))
    at = np.searchsorted(t, grid, side="right") - 1
    values = np.where(at >= 0, cum[np.clip(at, 0, None)] if len(cum) else 0.0, 0.0)
    return Band(name, int(rows["bytes"].sum()), rows.height, values)


def _over(heads: pl.DataFrame, options: WeightOptions) -> tuple[list[Over], NDArray[np.bool_]]:
    """The first line over each limit passed (as its largest), and which lines pass one."""
    if not options.limits or not heads.height:
        return [], np.zeros(heads.height, dtype=bool)
    values = np.array([lim.value for lim in options.limits], dtype=np.float64)
    length = heads["line_bytes"].to_numpy()
    index = np.searchsorted(values, length, side="left") - 1
    first: dict[int, Over] = {}
    t, kinds, rows = heads["t"].to_numpy(), heads["kind"].to_list(), heads["row"].to_numpy()
    for i in np.flatnonzero(index >= 0):
        k = int(index[i])
        if k not in first:
            limit = options.limits[k]
            first[k] = Over(float(t[i]), int(length[i]), limit, str(kinds[i]), int(rows[i]))
    return [first[k] for k in sorted(first)], index >= 0


def thinned(t: Floats, values: Floats, right: float) -> tuple[Floats, Floats]:
    """All the points when there are at most POINTS, else the largest of each of POINTS
    time bins (at that point's own time): the peaks a person looks for stay."""
    if len(t) <= POINTS:
        return t, values
    bins = np.minimum((t / max(right, 1e-9) * POINTS).astype(np.int64), POINTS - 1)
    order = np.lexsort((-values, bins))  # by bin, the largest first
    first = order[np.concatenate(([True], np.diff(bins[order]) != 0))]
    return t[first], values[first]
