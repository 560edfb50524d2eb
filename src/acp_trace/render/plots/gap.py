"""The gap chart: how long clients wait between the end of the replayed history and the response.

The gap is the replays table's `gap_ms`, measured from what its `gap_source` names, and each
lane says so in the words of `gap_start`: "replay_complete marker → response"; a vendor
end-of-replay event (claude-agent-acp's `jetbrains.air.loadReplayEnd`, whatever role the rules
give it: it is never called a marker) "vendor event PATH → response"; else the last history
update, "last history update (no marker) → response".
One lane (row) per agent version and source on a shared axis (logarithmic when the gaps span
decades), so agents compare at a glance; lanes never overlap, so no colours blend:

- a few replays: every replay is a dot; up to three are each labelled with their value;
- many (over `DOTS_UP_TO` in a lane): the distribution, as a histogram whose bins are equal
  slices of the axis (1/`BINS` of it each);
- per lane, never pooled across agents: p50, p90 and p99 as marks with their values once the
  lane has enough replays for each to differ from the max (`MIN_REPLAYS`), and the max;
  labels on one row that move aside rather than hide each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import NDArray

from acp_trace.quantities import count, duration
from acp_trace.render.gap_source import FALLBACK, MARKER, VENDOR, gap_start
from acp_trace.render.plots._common import (
    LABEL_SIZE,
    PERCENTILES,
    TICK_SIZE,
    add_note,
    agent_labels,
    axis_labels,
    blank_figure,
    empty_figure,
    natural,
    plural,
    set_scale,
    title,
    untimed_note,
)
from acp_trace.render.plots._labels import RowLabel, row_labels, settle_layout

__all__ = ["FALLBACK", "MARKER", "VENDOR", "gap_start"]


def source_text(source: str) -> str:
    """What a lane's gap is measured from, for its label: `vendor event PATH → response`."""
    return f"{gap_start(source)} → response"


HEADING = "Replay gap: end of the replayed history → response"
X_LABEL = "gap (ms)"
SUBTITLE = (
    "from what each lane names: the replay_complete marker,\n"
    "else a vendor end-of-replay event, else the last replayed history update"
)
PERCENTILE_STYLE = {50: "-", 90: "--", 99: ":"}
MIN_REPLAYS = {50: 4, 90: 10, 99: 100}  # below this, the percentile is (nearly) the max
LABEL_EACH_UP_TO = 3  # lanes with this many replays or fewer label every value
DOTS_UP_TO = 100  # lanes with more replays show a histogram
BINS = 60
MAX_LANES = 10
BAND = (0.05, 0.45)  # the lane's data, above its y (dots jittered in it, histogram bars)
LABEL_ROW = -0.22  # the lane's labels, below its y
MARK_SPAN = (-0.06, 0.48)
MIN_LANES_TALL = 3.2  # the y axis spans at least this many lanes: few lanes stay compact
MIN_BAR = 0.04  # a bin with any replay is at least this fraction of the band tall


@dataclass(frozen=True)
class Lane:
    """The gaps of one agent version from one source (`gap_source`)."""

    agent: str
    source: str
    values: NDArray[np.float64]  # sorted

    @property
    def name(self) -> str:
        return f"{self.agent} · {source_text(self.source)}"

    @property
    def label(self) -> str:
        n = self.values.size
        return f"{self.agent} · {count(n)} {plural(n, 'replay')}\n{source_text(self.source)}"


def with_gap(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> pl.DataFrame:
    """The replays table with `gap_ms` and `gap_source` (`marker`, `vendor:PATH` or
    `last_history`) both null where the gap cannot be measured (no response, or an
    ordering-only trace)."""
    gap = pl.when(pl.col("trace").is_in(list(untimed))).then(None).otherwise(pl.col("gap_ms"))
    return replays.with_columns(gap.alias("gap_ms")).with_columns(
        pl.when(pl.col("gap_ms").is_null())
        .then(None)
        .otherwise(pl.col("gap_source"))
        .alias("gap_source")
    )


def gap_table(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> pl.DataFrame:
    """Per replay with a measurable gap: trace, session, request_id, agent, agent_version,
    gap_source and gap_ms."""
    return (
        with_gap(replays, untimed)
        .filter(pl.col("gap_ms").is_not_null())
        .select("trace", "session", "request_id", "agent", "agent_version", "gap_source", "gap_ms")
    )


def lanes_of(gaps: pl.DataFrame) -> list[Lane]:
    """The lanes of a gap table, by agent name, version (in numeric order) and source."""
    keys = ["agent", "agent_version", "gap_source"]
    groups = sorted(
        gaps.group_by(keys, maintain_order=True),
        key=lambda g: (natural(str(g[0][0] or "")), natural(str(g[0][1] or "")), g[0][2]),
    )
    names = agent_labels((agent, version) for (agent, version, _), _ in groups)
    return [
        Lane(names[(agent, version)], str(source), np.sort(part["gap_ms"].to_numpy()))
        for (agent, version, source), part in groups
    ]


def gap_figure(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> Figure:
    """The replay gaps, one lane per agent version, with each lane's percentiles marked."""
    gaps = gap_table(replays, untimed)
    notes = untimed_note(list(untimed))
    left_out = replays.filter(~pl.col("trace").is_in(list(untimed))).height - gaps.height
    if left_out:
        notes.append(
            f"{left_out} {plural(left_out, 'replay')} left out: "
            "no response, or no history and no marker."
        )
    if not gaps.height:
        return empty_figure(HEADING, "No replay gaps to show:\nno replay with a response.", notes)
    lanes = _at_most(lanes_of(gaps), notes)
    fig = blank_figure()
    ax = fig.add_subplot()
    ax.tick_params(labelsize=TICK_SIZE)
    shown = np.concatenate([lane.values for lane in lanes])
    n, agents = shown.size, len({lane.agent for lane in lanes})
    title(
        fig,
        f"{HEADING} · {count(n)} {plural(n, 'replay')} with a gap · {count(agents)} agent "
        f"{plural(agents, 'version')}",
    )
    set_scale(ax, shown, room=0.6 if n == 1 else 0.3)
    _lanes_axis(ax, lanes)
    for index, lane in enumerate(lanes):
        _draw_lane(ax, lane, -index, f"C{index % 10}", alone=n == 1)
    add_note(fig, notes)
    settle_layout(ax)  # the labels are packed in pixels: the layout must be final
    for index, lane in enumerate(lanes):
        small = lane.values.size <= LABEL_EACH_UP_TO
        mark = -index + ((BAND[0] + BAND[1]) / 2 if small else MARK_SPAN[0])
        size = LABEL_SIZE if n == 1 else None
        row_labels(ax, lane_labels(lane), -index + LABEL_ROW, mark, size=size)
    return fig


def _at_most(lanes: list[Lane], notes: list[str]) -> list[Lane]:
    """The `MAX_LANES` lanes with the most replays (in their order), and a note on the rest."""
    if len(lanes) <= MAX_LANES:
        return lanes
    kept = sorted(lanes, key=lambda lane: -lane.values.size)[:MAX_LANES]
    hidden = [lane for lane in lanes if lane not in kept]
    replays = sum(lane.values.size for lane in hidden)
    notes.append(
        f"{count(len(hidden))} more {plural(len(hidden), 'lane')} ({count(replays)} {plural(replays, 'replay')}) "
        "not shown: the lanes with the most replays are; `acp-trace replays` lists every replay."
    )
    return [lane for lane in lanes if lane in kept]


def _lanes_axis(ax: Axes, lanes: list[Lane]) -> None:
    ys = [-i for i in range(len(lanes))]
    low, high = -len(lanes) + 0.5, 0.62
    spare = max(0.0, MIN_LANES_TALL - (high - low)) / 2
    ax.set_ylim(low - spare, high + spare)
    ax.set_yticks([y + 0.1 for y in ys], [lane.label for lane in lanes])
    ax.tick_params(axis="y", length=0)
    for y in ys[1:]:
        ax.axhline(y + 0.5, color="0.85", linewidth=1, zorder=0)
    ax.grid(axis="x", color="0.92", zorder=0)
    ax.set_axisbelow(True)
    axis_labels(ax, X_LABEL, "", SUBTITLE)


def _draw_lane(ax: Axes, lane: Lane, y: float, color: str, alone: bool) -> None:
    values = lane.values
    low, high = y + BAND[0], y + BAND[1]
    if values.size > DOTS_UP_TO:
        edges = bin_edges(ax)
        counts, _ = np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges)
        share = np.where(counts > 0, np.maximum(counts / counts.max(), MIN_BAR), 0.0)
        heights = low + (high - low) * share
        bars = ax.stairs(heights, edges, baseline=low, fill=True, color=color, alpha=0.85)
        bars.set_gid(f"hist:{lane.name}")
    else:
        middle = (low + high) / 2
        if values.size <= LABEL_EACH_UP_TO:
            jitter = np.zeros(values.size)
        else:
            jitter = np.random.default_rng(0).uniform(-0.15, 0.15, values.size)
        if alone:  # a stem from 0 makes one value's size readable
            ax.plot([0, values[0]], [middle, middle], color=color, linewidth=2, gid="stem")
        dots = ax.scatter(
            values, middle + jitter, s=90 if alone else 28, color=color, alpha=0.75, zorder=3
        )
        dots.set_gid(f"dots:{lane.name}")
    if values.size > LABEL_EACH_UP_TO:  # where the max label's leader line ends
        top = float(values[-1])
        ax.plot([top, top], [y + MARK_SPAN[0], low], color="0.45", linewidth=0.8, gid="max")
    for q, value in lane_percentiles(lane).items():
        ax.plot(
            [value, value],
            [y + MARK_SPAN[0], y + MARK_SPAN[1]],
            color="0.1",
            linestyle=PERCENTILE_STYLE[q],
            linewidth=1.4,
            zorder=4,
            gid=f"p{q}:{lane.name}",
        )


def bin_edges(ax: Axes) -> NDArray[np.float64]:
    """`BINS` + 1 edges that cut the x axis into equal slices, whatever its scale."""
    scale = ax.xaxis.get_transform()
    lo, hi = scale.transform(np.array(ax.get_xlim()))
    edges = scale.inverted().transform(np.linspace(lo, hi, BINS + 1))
    return np.asarray(edges, dtype=np.float64)


def percentiles(values: NDArray[np.float64]) -> dict[int, float]:
    """p50, p90 and p99 (linear interpolation) of some values."""
    return {q: float(np.percentile(values, q, method="linear")) for q in PERCENTILES}


def lane_percentiles(lane: Lane) -> dict[int, float]:
    """The percentiles a lane has enough replays for (`MIN_REPLAYS`)."""
    n = lane.values.size
    return {q: v for q, v in percentiles(lane.values).items() if n >= MIN_REPLAYS[q]}


def lane_labels(lane: Lane) -> list[RowLabel]:
    """Each value of a small lane; else its percentiles and its max, those that read the same
    (`p50, p90, max 500 ms`) as one label at the highest of them."""
    values = lane.values
    if values.size <= LABEL_EACH_UP_TO:
        return [RowLabel(float(v), duration(v), f"value:{lane.name}") for v in values]
    marks = [(f"p{q}", v) for q, v in lane_percentiles(lane).items()]
    marks.append(("max", float(values[-1])))
    labels: list[RowLabel] = []
    names: list[str] = []
    for i, (name, value) in enumerate(marks):
        names.append(name)
        if i + 1 < len(marks) and duration(marks[i + 1][1]) == duration(value):
            continue  # the next one reads the same: one label for both
        text = f"{', '.join(names)} {duration(value)}"  # its gid names the highest: max, p99...
        labels.append(RowLabel(value, text, f"{names[-1]}-label:{lane.name}"))
        names = []
    return labels
