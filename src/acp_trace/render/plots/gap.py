"""The gap chart: how long clients wait between the end of the replayed history and the response.

The gap is `marker_to_response_ms`; a replay without a marker (v1 loads, today's agents) falls
back to `last_history_to_response_ms`, and its legend entry says "no marker: last history".
One series per agent, version and source; a histogram on the left, the ECDF on the right, and
p50, p90 and p99 of all the gaps marked on both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Polygon
from numpy.typing import NDArray

from acp_trace.render.plots._common import (
    FIGSIZE,
    PERCENTILES,
    TEXT_SIZE,
    TICK_SIZE,
    add_note,
    agent_label,
    axis_labels,
    blank_figure,
    empty_figure,
    ms,
    set_scale,
    spans_decades,
    title,
    untimed_note,
)

MARKER = "marker"
FALLBACK = "last_history"
SOURCE_TEXT = {MARKER: "marker", FALLBACK: "no marker: last history"}
LEGEND_TITLE = "agent version · gap measured from … to the response"
HEADING = "Replay gap: end of history → response"
PERCENTILE_STYLE = {50: ":", 90: "--", 99: "-."}
LEGEND_COLUMNS = 2


@dataclass(frozen=True)
class Series:
    """The gaps of one agent version from one source (marker or last history update)."""

    agent: str
    source: str
    values: NDArray[np.float64]

    @property
    def label(self) -> str:
        return f"{self.agent} · {SOURCE_TEXT[self.source]} (n={self.values.size})"


def gap_table(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> pl.DataFrame:
    """Per replay with a measurable gap: agent, agent_version, source and gap_ms."""
    marker = pl.col("marker_to_response_ms")
    fallback = pl.col("last_history_to_response_ms")
    return (
        replays.filter(~pl.col("trace").is_in(list(untimed)))
        .with_columns(
            pl.coalesce(marker, fallback).alias("gap_ms"),
            pl.when(marker.is_not_null())
            .then(pl.lit(MARKER))
            .otherwise(pl.lit(FALLBACK))
            .alias("source"),
        )
        .filter(pl.col("gap_ms").is_not_null())
        .select("trace", "session", "agent", "agent_version", "source", "gap_ms")
    )


def series_of(gaps: pl.DataFrame) -> list[Series]:
    """The series of a gap table, in order of first appearance."""
    out = []
    keys = ["agent", "agent_version", "source"]
    for (agent, version, source), part in gaps.group_by(keys, maintain_order=True):
        values = part["gap_ms"].to_numpy().astype(np.float64)
        out.append(Series(agent_label(agent, version), str(source), values))
    return out


def gap_figure(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> Figure:
    """Histogram and ECDF of the replay gaps, grouped by agent version, p50/p90/p99 marked."""
    gaps = gap_table(replays, untimed)
    notes = untimed_note(list(untimed))
    left_out = replays.filter(~pl.col("trace").is_in(list(untimed))).height - gaps.height
    if left_out:
        notes.append(f"{left_out} replay(s) left out: no response, or no history and no marker.")
    if not gaps.height:
        return empty_figure(HEADING, "No replay gaps to show:\nno replay with a response.", notes)
    series = series_of(gaps)
    values = gaps["gap_ms"].to_numpy().astype(np.float64)
    fig, hist_ax, ecdf_ax, legend_ax = _layout(len(series))
    title(fig, f"{HEADING} ({values.size} replays)")
    _histogram(hist_ax, series, values)
    _ecdf(ecdf_ax, series)
    _legend(legend_ax, ecdf_ax, len(series))
    for ax, top in ((hist_ax, True), (ecdf_ax, False)):
        set_scale(ax, values)
        mark_percentiles(ax, values, top)
    add_note(fig, notes)
    return fig


def _bins(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shared bin edges: geometric when the values span decades (a first bin from the
    smallest value for zeros), else numpy's automatic choice."""
    if spans_decades(values):
        positive = values[values > 0]
        edges = np.geomspace(positive.min(), positive.max(), 41)
        if positive.size < values.size:
            edges = np.concatenate([[values.min()], edges])
        return edges
    edges = np.histogram_bin_edges(values, bins="auto")
    if edges.size > 61:
        edges = np.linspace(values.min(), values.max(), 61)
    return edges.astype(np.float64)


def _histogram(ax: Axes, series: list[Series], values: NDArray[np.float64]) -> None:
    bins = _bins(values)
    for index, s in enumerate(series):
        color = f"C{index % 10}"
        patches = ax.hist(
            s.values,
            bins=list(bins),
            histtype="stepfilled",
            facecolor=to_rgba(color, 0.3),
            edgecolor=color,
            linewidth=1.5,
            label=s.label,
        )[2]
        for patch in patches if isinstance(patches, list) else [patches]:
            if isinstance(patch, Polygon):
                patch.set_gid(f"hist:{s.label}")
    axis_labels(ax, "gap (ms)", "replays", "Histogram")


def _ecdf(ax: Axes, series: list[Series]) -> None:
    for index, s in enumerate(series):
        line = ax.ecdf(s.values, color=f"C{index % 10}", linewidth=2, label=s.label)
        line.set_gid(f"ecdf:{s.label}")
    ax.set_ylim(0, 1.02)
    axis_labels(ax, "gap (ms)", "fraction of replays", "Cumulative distribution (ECDF)")


def _layout(n_series: int) -> tuple[Figure, Axes, Axes, Axes]:
    """Histogram and ECDF side by side, a band below them for the legend."""
    fig = blank_figure()
    rows = math.ceil(n_series / LEGEND_COLUMNS)
    band = 0.45 + 0.3 * rows  # inches
    axes = fig.subplot_mosaic(
        [["hist", "ecdf"], ["legend", "legend"]],
        height_ratios=[FIGSIZE[1] - 1.0 - band, band],
    )
    for name in ("hist", "ecdf"):
        axes[name].tick_params(labelsize=TICK_SIZE)
    return fig, axes["hist"], axes["ecdf"], axes["legend"]


def _legend(legend_ax: Axes, ecdf_ax: Axes, n_series: int) -> None:
    legend_ax.set_axis_off()
    legend = legend_ax.legend(
        *ecdf_ax.get_legend_handles_labels(),
        loc="center",
        ncols=min(n_series, LEGEND_COLUMNS),
        fontsize=TEXT_SIZE,
        title=LEGEND_TITLE,
        title_fontsize=TEXT_SIZE,
        frameon=False,
    )
    legend.set_gid("gap-legend")


def percentiles(values: NDArray[np.float64]) -> dict[int, float]:
    """p50, p90 and p99 (linear interpolation) of some values."""
    return {q: float(np.percentile(values, q, method="linear")) for q in PERCENTILES}


def mark_percentiles(ax: Axes, values: NDArray[np.float64], top: bool) -> None:
    """Vertical lines at p50, p90, p99 with labels that show the numbers."""
    for rank, (q, value) in enumerate(percentiles(values).items()):
        ax.axvline(value, color="0.15", linestyle=PERCENTILE_STYLE[q], linewidth=1.2, gid=f"p{q}")
        text = f"p{q} {ms(value)}"
        # Histogram: left of the line, from the top; ECDF: right of it, from the bottom.
        y = 0.97 - 0.2 * rank if top else 0.03 + 0.2 * rank
        ax.annotate(
            text,
            xy=(value, y),
            xycoords=("data", "axes fraction"),
            xytext=(-4 if top else 4, 0),
            textcoords="offset points",
            rotation=90,
            ha="right" if top else "left",
            va="top" if top else "bottom",
            fontsize=TEXT_SIZE,
            gid=f"p{q}-label",
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8},
        )
