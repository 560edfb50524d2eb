"""The diff chart: BASE and NEW replay gaps as two ECDFs per agent, one row per agent, on a
shared x axis (logarithmic when the gaps span decades); the legend gives n, p50 and p90 of
each side."""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import NDArray

from acp_trace.quantities import count, duration
from acp_trace.render.plots._common import (
    FIGSIZE,
    LABEL_SIZE,
    TEXT_SIZE,
    agent_label,
    blank_figure,
    empty_figure,
    set_scale,
    title,
)

HEADING = "Replay gap, BASE vs NEW: end of history → response"
# BASE wide and pale under NEW narrow and dark: equal curves still show both.
SIDES = (("BASE", "#9e9e9e", 5.0), ("NEW", "#1f4e9c", 1.8))
MAX_LANES = 8


def _gaps(replays: pl.DataFrame) -> pl.DataFrame:
    gap = pl.col("gap_ms")  # from the marker, else a vendor event, else the last history
    return replays.select(pl.col("agent").fill_null("unknown agent"), gap.alias("ms")).drop_nulls(
        "ms"
    )


def diff_figure(base: pl.DataFrame, new: pl.DataFrame) -> Figure:
    """Two ECDFs per agent (rows, at most MAX_LANES, most replays first) from two replays
    tables; an empty figure that says why when neither side has a gap."""
    sides = {"BASE": _gaps(base), "NEW": _gaps(new)}
    both = pl.concat([sides["BASE"], sides["NEW"]])
    if both.height == 0:
        return empty_figure(HEADING, "No replay with a measurable gap on either side.")
    agents = both.group_by("agent").agg(pl.len()).sort(["len", "agent"], descending=[True, False])
    names = agents["agent"].to_list()[:MAX_LANES]
    fig = blank_figure()
    fig.set_size_inches(FIGSIZE[0], max(3.0, 1.9 * len(names) + 1.2))
    axes = fig.subplots(len(names), 1, squeeze=False, sharex=True)[:, 0]
    values = both["ms"].to_numpy()
    for ax, agent in zip(axes, names, strict=True):
        for side, color, width in SIDES:
            data = np.sort(sides[side].filter(pl.col("agent") == agent)["ms"].to_numpy())
            _ecdf(ax, data, side, color, width)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share ≤ x", fontsize=TEXT_SIZE)
        ax.set_title(agent_label(agent, None), loc="left", fontsize=TEXT_SIZE)
        ax.legend(loc="best", fontsize=TEXT_SIZE - 1, framealpha=0.9)
        ax.grid(alpha=0.3)
    scale = set_scale(axes[0], values)
    axes[-1].set_xlabel(
        "gap (ms)" + (", log scale" if scale != "linear" else ""), fontsize=LABEL_SIZE
    )
    hidden = len(agents) - len(names)
    heading = HEADING + (f" ({hidden} more agents not shown)" if hidden > 0 else "")
    title(fig, heading)
    return fig


def _ecdf(ax: Axes, data: NDArray[np.float64], side: str, color: str, width: float) -> None:
    if data.size == 0:
        ax.plot([], [], color=color, label=f"{side}: no replay")
        return
    xs = np.concatenate([data[:1], data])
    shares = np.arange(0, data.size + 1) / data.size  # from 0 at the first gap up to 1
    p50, p90 = np.percentile(data, [50, 90])
    label = f"{side} (n={count(data.size)}): p50 {duration(float(p50))}, p90 {duration(float(p90))}"
    ax.step(xs, shares, where="post", color=color, linewidth=width, label=label)
