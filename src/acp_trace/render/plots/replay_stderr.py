"""The replay chart's "agent stderr" lane: what the agent logged while the client waited.

Each stderr line inside the window is a tick at the time the tap read it. A line that names a
phase (`analysis.phases`: claude-agent-acp's `phase=NAME durationMs=N`, gemini-cli's startup
metrics, generic `NAME_ms=N` fields) is also a span from its start to its end (a phase is
logged when it ends): a *leaf* phase (one that holds no other) as a strong bar, a phase that
holds others (claude-agent-acp's `session-ready`) as a light bar above it. Labels name the
phase and its length ("sdk-initialize 1,327 ms"): the leaves' below the bars, the others'
above, the longest first and as many as fit the panel's width, packed so they never overlap
(a moved label gets a leader line). The lane shows phase names and numbers only, never the
text of a line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl
from matplotlib.axes import Axes
from matplotlib.text import Annotation

from acp_trace.quantities import count, trimmed
from acp_trace.render.plots._common import TEXT_SIZE, label, plural
from acp_trace.render.plots._labels import RowLabel, row_labels
from acp_trace.render.plots.replay_window import Lane, View

KIND = "stderr"
LEGEND = {
    "stderr-line": "agent stderr line",
    "leaf-phase": "phase (holds no other)",
    "outer-phase": "phase that holds others",
}
LINE_COLOUR = "0.35"
LEAF_COLOUR = "#937860"
OUTER_COLOUR = "#E6DACB"
NAME_LIMIT = 32  # characters of a phase name in a label
MIN_LABELLED = 0.04  # a phase is labelled when this much of the panel's width shows it
# Pixels between two labels: twice the gap chart's, since small text renders relatively wider
# at a lower dpi (the notebook's 64) and a tight row would touch there.
PAD = 24.0
# Heights in data units, from the lane's y: the phases that hold others, nested ones lower,
# in a band above the leaves, and their labels above it; the leaf bars on the lane, the line
# ticks and the leaf labels below.
OUTER_LABEL, OUTER_BAND, OUTER_HEIGHT = 0.54, (0.15, 0.38), 0.10
LEAF_BAR, LEAF_HEIGHT = 0.04, 0.18
TICK_Y, LEAF_LABEL = -0.15, -0.36


@dataclass(frozen=True)
class Span:
    """One phase as drawn: its line's seq, name, start and end (ms after the request)."""

    seq: int
    name: str
    start: float
    end: float
    leaf: bool

    @property
    def text(self) -> str:
        return f"{label(self.name, NAME_LIMIT)} {trimmed(self.end - self.start)} ms"


def spans(view: View) -> list[Span]:
    """The phases the window's stderr lines name, in the order they were logged; a phase
    whose length is not a finite number (`durationMs=` and 400 digits) has no start to draw
    and is left out."""
    named = view.stderr.filter(pl.col("phase").is_not_null())
    out = []
    for seq, name, t, took, leaf in named.select(
        "seq", "phase", "t", "duration_ms", "leaf"
    ).iter_rows():
        if math.isfinite(t - took):
            out.append(Span(seq, name, t - took, t, bool(leaf)))
    return out


def lane_name(view: View, lane: Lane) -> str:
    """`agent stderr` and what it holds: `(9 lines, 8 phases)`."""
    lines, named = view.stderr.height, len(spans(view))
    return f"agent stderr\n({count(lines)} {plural(lines, 'line')}, {count(named)} {plural(named, 'phase')})"


def draw(ax: Axes, view: View, lane: Lane, labelled: set[str]) -> None:
    """The ticks of the lines and the bars of the phases (labels come later: `add_labels`)."""
    y = lane.y

    def legend(key: str) -> str:
        if key in labelled:
            return "_nolegend_"
        labelled.add(key)
        return LEGEND[key]

    found = spans(view)
    levels = outer_levels([s for s in found if not s.leaf])
    step = min(OUTER_HEIGHT, (OUTER_BAND[1] - OUTER_BAND[0]) / max(len(levels), 1))
    bars = [
        (s, "outer-phase", OUTER_BAND[1] - step * (level + 0.5), step * 0.8, OUTER_COLOUR)
        for level, group in enumerate(levels)
        for s in group
    ]
    bars += [(s, "leaf-phase", LEAF_BAR, LEAF_HEIGHT, LEAF_COLOUR) for s in found if s.leaf]
    for s, key, base, height, colour in bars:
        ax.barh(
            y + base,
            s.end - s.start,
            left=s.start,
            height=height,
            color=colour,
            edgecolor=LEAF_COLOUR,
            linewidth=0.6,
            zorder=2 if s.leaf else 1.5,
            label=legend(key),
            gid=f"{key}:{s.seq}",
        )
    t = view.stderr["t"].to_list()
    ticks = ax.scatter(
        t, [y + TICK_Y] * len(t), marker="|", s=90, color=LINE_COLOUR, linewidths=1.2, zorder=3
    )
    ticks.set_gid("stderr-lines")
    ticks.set_label(legend("stderr-line"))


def outer_levels(outer: list[Span]) -> list[list[Span]]:
    """The phases that hold others in levels, the longest on top: each goes on the first level
    where it overlaps no phase already there (a nested phase lands below the one holding it)."""
    levels: list[list[Span]] = []
    for s in sorted(outer, key=lambda s: s.start - s.end):
        for level in levels:
            if all(s.end <= o.start or o.end <= s.start for o in level):
                level.append(s)
                break
        else:
            levels.append([s])
    return levels


def add_labels(ax: Axes, view: View, lane: Lane) -> list[Annotation]:
    """The labels of the phases visible in the panel: the longest first, as many as fit its
    width, in two packed rows (leaves below the bars, the others above). The figure's layout
    must be final (`_labels.settle_layout`)."""
    low, high = ax.get_xlim()
    visible = []
    for s in spans(view):
        start, end = max(s.start, low), min(s.end, high)
        if end - start >= MIN_LABELLED * (high - low):
            visible.append((s, (start + end) / 2))
    visible.sort(key=lambda item: item[0].start - item[0].end)  # the longest first
    out: list[Annotation] = []
    for leaf, row, mark, colour in (
        (True, LEAF_LABEL, LEAF_BAR - LEAF_HEIGHT / 2, "0.1"),
        (False, OUTER_LABEL, OUTER_BAND[1], "0.35"),
    ):
        wanted = [RowLabel(x, s.text, f"phase-label:{s.seq}") for s, x in visible if s.leaf == leaf]
        texts = row_labels(ax, fitting(ax, wanted), lane.y + row, lane.y + mark, pad=PAD)
        for text in texts:
            text.set_color(colour)
        out += texts
    return out


def fitting(ax: Axes, labels: list[RowLabel]) -> list[RowLabel]:
    """The first labels (in the order given) whose widths, with the padding `row_labels`
    keeps between them and at the edges, fit the width of the axes."""
    fig = ax.get_figure(root=True)
    assert fig is not None
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvas
    room = ax.get_window_extent(renderer).width - PAD
    chosen = []
    for lab in labels:
        probe = ax.text(0, 0, lab.text, fontsize=TEXT_SIZE)
        width = probe.get_window_extent(renderer).width
        probe.remove()
        if width + PAD > room:
            continue
        room -= width + PAD
        chosen.append(lab)
    return chosen
