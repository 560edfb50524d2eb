"""The latency chart: request to response per method (box and strip), and prompt-turn phases."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import NDArray

from acp_trace.render.plots._common import (
    add_note,
    axis_labels,
    empty_figure,
    label,
    new_figure,
    set_scale,
    title,
    untimed_note,
)

HEADING = "Latency"
MAX_METHODS = 15
PHASES = {
    "first_chunk_ms": "first agent chunk",
    "acceptance_ms": "prompt accepted",
    "end_ms": "end of turn",
}


def method_latencies(
    tl: pl.DataFrame, untimed: Sequence[str] = ()
) -> dict[str, NDArray[np.float64]]:
    """Request-to-response times (ms) per method, the most frequent methods first."""
    answered = tl.filter(
        pl.col("kind") == "request",
        pl.col("latency_ms").is_not_null(),
        ~pl.col("trace").is_in(list(untimed)),
    )
    groups = answered.group_by("method").agg(pl.col("latency_ms"), pl.len().alias("n"))
    groups = groups.sort(["n", "method"], descending=[True, False], nulls_last=True)
    return {
        str(m): np.asarray(v, dtype=np.float64)
        for m, v in groups.select("method", "latency_ms").rows()
    }


def phase_latencies(
    turns: pl.DataFrame, untimed: Sequence[str] = ()
) -> dict[str, NDArray[np.float64]]:
    """Prompt-turn phase times (ms since the prompt request), for phases that occurred."""
    timed = turns.filter(~pl.col("trace").is_in(list(untimed)))
    out = {}
    for column, name in PHASES.items():
        values = timed[column].drop_nulls().to_numpy().astype(np.float64)
        if values.size:
            out[name] = values
    return out


def latency_figure(tl: pl.DataFrame, turns: pl.DataFrame, untimed: Sequence[str] = ()) -> Figure:
    """Request-to-response times per method and prompt-turn phases, as box and strip plots."""
    methods = method_latencies(tl, untimed)
    phases = phase_latencies(turns, untimed)
    notes = untimed_note(list(untimed))
    if not methods:
        return empty_figure(
            f"{HEADING}: request → response", "No answered requests with timestamps.", notes
        )
    if len(methods) > MAX_METHODS:
        notes.append(f"{len(methods) - MAX_METHODS} less frequent method(s) not shown.")
        methods = dict(list(methods.items())[:MAX_METHODS])
    if not phases:
        notes.append("No prompt turns with timestamps: no turn phases to show.")
    fig, axes = new_figure(2, width_ratios=[3.0, 2.0]) if phases else new_figure(1)
    count = sum(v.size for v in methods.values())
    title(fig, f"{HEADING}: {count} answered requests, {len(turns)} prompt turns")
    box_strip(axes[0], methods, "method")
    axis_labels(axes[0], "request → response (ms)", "method", "Request to response, per method")
    if phases:
        box_strip(axes[1], phases, "phase")
        axis_labels(axes[1], "ms after the prompt request", "phase", "Prompt turn phases")
    add_note(fig, notes)
    return fig


def box_strip(ax: Axes, groups: dict[str, NDArray[np.float64]], kind: str) -> None:
    """Horizontal box plots with every value as a jittered dot; the first group on top."""
    names = list(groups)
    positions = list(range(len(names), 0, -1))
    data = [groups[n] for n in names]
    boxes = ax.boxplot(
        data,
        orientation="horizontal",
        positions=positions,
        widths=0.55,
        showfliers=False,
        patch_artist=True,
        tick_labels=[f"{label(n)} (n={groups[n].size})" for n in names],
        medianprops={"color": "0.1", "linewidth": 2},
        boxprops={"facecolor": "#DCE6F2", "edgecolor": "#4C72B0"},
    )
    rng = np.random.default_rng(0)
    for name, y, values, box in zip(names, positions, data, boxes["boxes"], strict=True):
        box.set_gid(f"box:{kind}:{name}")
        jitter = rng.uniform(-0.18, 0.18, values.size)
        dots = ax.scatter(values, y + jitter, s=14, color="#C44E52", alpha=0.55, zorder=3)
        dots.set_gid(f"strip:{kind}:{name}")
    set_scale(ax, np.concatenate(data))
    ax.grid(axis="x", color="0.9")
