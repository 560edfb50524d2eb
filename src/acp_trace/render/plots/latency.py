"""The latency chart: request to response per method, and the prompt-turn phases in the order
they happen (first agent chunk, acceptance, end of turn).

One row per method (or phase) and agent version, never pooled across agents: every value a dot
(one colour per agent version), a box once a row has `MIN_BOX` values, and the row's count,
p50 and max in its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from numpy.typing import NDArray

from acp_trace.analysis.latency import phase_order
from acp_trace.quantities import count, duration
from acp_trace.render.plots._common import (
    TICK_SIZE,
    add_note,
    agent_labels,
    axis_labels,
    empty_figure,
    label,
    natural,
    new_figure,
    plural,
    set_scale,
    title,
    untimed_note,
)

HEADING = "Latency"
MAX_ROWS = {"method": 12, "phase": 6}  # rows of 2-line names in a 675 px figure
MIN_BOX = 5  # a row with fewer values shows dots only: a box of one value is a line
ROOMY_UP_TO = 6  # rows in a panel whose names have the max and full-size type
COMPACT_SIZE = 8  # the names' type size in a panel of more rows
PHASES = {
    "first_chunk_ms": "first agent chunk",
    "acceptance_ms": "prompt accepted",
    "end_ms": "end of turn",
}


@dataclass(frozen=True)
class Row:
    """The times of one method or phase (`group`) for one agent version (`who`, None when
    the chart has a single agent version); `colour` is the agent version's."""

    group: str
    who: str | None
    values: NDArray[np.float64]
    colour: str

    @property
    def key(self) -> str:
        return self.group if self.who is None else f"{self.group} · {self.who}"

    def name(self, compact: bool = False) -> str:
        """The row's name on the axis: what and who (the agent version whole), then on a
        second line the count and numbers (without the max when the panel has many rows)."""
        first = label(self.group, 32) + ("" if self.who is None else " · " + self.who)
        v = self.values
        if v.size == 1:
            numbers = f"n=1 · {duration(float(v[0]))}"
        else:
            numbers = (
                f"n={count(v.size)} · p50 {duration(float(np.percentile(v, 50, method='linear')))}"
            )
            numbers += "" if compact else f" · max {duration(float(v.max()))}"
        return f"{first}\n{numbers}"


@dataclass(frozen=True)
class Agents:
    """The agent versions of a chart: each one's label (`agent_labels`: the agent's name
    without its npm scope where that tells them apart) and colour, by name."""

    labels: dict[tuple[str | None, str | None], str]
    colours: dict[str, str]

    @classmethod
    def of(cls, *frames: pl.DataFrame) -> Agents:
        pairs = {p for df in frames for p in df.select("agent", "agent_version").unique().rows()}
        labels = agent_labels(sorted(pairs, key=lambda p: (natural(p[0]), natural(p[1]))))
        whos = sorted(set(labels.values()), key=natural)
        return cls(labels, {who: f"C{i % 10}" for i, who in enumerate(whos)})


def _rows(df: pl.DataFrame, group: str, value: str, order: list[str], agents: Agents) -> list[Row]:
    """Values per `group` and agent version, groups in `order`, agent versions by name; each
    agent version in its colour (the same in both panels)."""
    rank = {name: i for i, name in enumerate(order)}
    parts = [
        (str(g), agents.labels[(a, v)], np.asarray(vals, dtype=np.float64))
        for g, a, v, vals in df.group_by(group, "agent", "agent_version").agg(value).rows()
    ]
    parts.sort(key=lambda p: (rank.get(p[0], len(rank)), natural(p[1])))
    several = len(agents.colours) > 1  # name the agent version when the chart has several
    return [Row(g, who if several else None, v, agents.colours[who]) for g, who, v in parts]


def timed_requests(tl: pl.DataFrame, untimed: Sequence[str] = ()) -> pl.DataFrame:
    """The requests of the traces with timestamps (the latency table's `count`, of them)."""
    return tl.filter(pl.col("kind") == "request", ~pl.col("trace").is_in(list(untimed)))


def method_latencies(requests: pl.DataFrame, agents: Agents) -> list[Row]:
    """Request-to-response times (ms) per method and agent version, the most frequent
    methods first."""
    answered = requests.filter(pl.col("latency_ms").is_not_null())
    counts = answered.group_by("method").len().sort(["len", "method"], descending=[True, False])
    return _rows(answered, "method", "latency_ms", [str(m) for m in counts["method"]], agents)


def phase_latencies(turns: pl.DataFrame, agents: Agents) -> list[Row]:
    """Prompt-turn phase times (ms since the prompt request) per agent version, in the order
    phases happen inside a turn (`phase_order`, as `acp-trace latency` lists them); only
    phases that occurred."""
    order = [PHASES[p] for p in phase_order(turns, [])["phase"]]
    long = turns.unpivot(
        index=["agent", "agent_version"], on=list(PHASES), variable_name="phase", value_name="ms"
    ).drop_nulls("ms")
    long = long.with_columns(pl.col("phase").replace_strict(PHASES))
    return _rows(long, "phase", "ms", order, agents)


def latency_figure(tl: pl.DataFrame, turns: pl.DataFrame, untimed: Sequence[str] = ()) -> Figure:
    """Request-to-response times per method and prompt-turn phases, a row per agent version,
    a legend of the agent versions' colours, and in the title the requests counted as the
    latency table counts them (every request, answered or not)."""
    requests = timed_requests(tl, untimed)
    turns = turns.filter(~pl.col("trace").is_in(list(untimed)))
    agents = Agents.of(requests, turns)
    methods, phases = method_latencies(requests, agents), phase_latencies(turns, agents)
    notes = untimed_note(list(untimed))
    if not methods:
        return empty_figure(
            f"{HEADING}: request → response", "No answered requests with timestamps.", notes
        )
    methods, phases = _at_most(methods, "method", notes), _at_most(phases, "phase", notes)
    if not phases:
        notes.append("No prompt turns with timestamps: no turn phases to show.")
    if phases:  # one above the other: both get the whole width and the same margin
        heights = [len(methods) + 1.0, len(phases) + 1.0]
        fig, axes = new_figure(nrows=2, height_ratios=heights)
    else:
        fig, axes = new_figure()
    title(fig, _title(requests, turns.height, agents))
    box_strip(axes[0], methods, "method")
    axis_labels(axes[0], "request → response (ms)", "", "Request to response, per method")
    if phases:
        box_strip(axes[1], phases, "phase")
        heading = "Prompt turn phases, in time order"
        axis_labels(axes[1], "ms after the session/prompt request", "", heading)
    _legend(fig, agents)
    add_note(fig, notes)
    return fig


def _title(requests: pl.DataFrame, turned: int, agents: Agents) -> str:
    """`Latency: 73 requests (72 answered), 4 prompt turns`: the requests as the latency
    table counts them, of one agent version when there is one."""
    answered = requests.filter(pl.col("latency_ms").is_not_null()).height
    only = f" of {next(iter(agents.colours))}" if len(agents.colours) == 1 else ""
    return (
        f"{HEADING}{only}: {count(requests.height)} {plural(requests.height, 'request')} "
        f"({count(answered)} answered), {count(turned)} prompt {plural(turned, 'turn')}"
    )


def _legend(fig: Figure, agents: Agents) -> None:
    """A legend of the agent versions' colours, above the panels (none for one version: the
    title names it)."""
    if len(agents.colours) < 2:
        return
    handles = [
        Line2D([], [], marker="o", linestyle="", color=colour, markersize=8, label=who)
        for who, colour in agents.colours.items()
    ]
    fig.legend(
        handles=handles, loc="outside right upper", title="agent version",
        fontsize=TICK_SIZE, frameon=False,
    )  # fmt: skip


def _at_most(rows: list[Row], kind: str, notes: list[str]) -> list[Row]:
    """The `MAX_ROWS[kind]` rows with the most values (in their order), and a note on the rest."""
    limit = MAX_ROWS[kind]
    if len(rows) <= limit:
        return rows
    left = len(rows) - limit
    kept = {r.key for r in sorted(rows, key=lambda r: -r.values.size)[:limit]}
    values = sum(r.values.size for r in rows if r.key not in kept)
    notes.append(
        f"{left} more {kind} {plural(left, 'row')} ({count(values)} {plural(values, 'value')}) "
        "not shown (those with fewest values)."
    )
    return [r for r in rows if r.key in kept]


def box_strip(ax: Axes, rows: list[Row], kind: str) -> None:
    """Horizontal rows, the first on top: every value a dot (jittered when there are more
    than three), and a box (quartiles, whiskers to 1.5 IQR) once there are `MIN_BOX`."""
    positions = list(range(len(rows), 0, -1))
    boxed = [i for i, row in enumerate(rows) if row.values.size >= MIN_BOX]
    if boxed:
        boxes = ax.boxplot(
            [rows[i].values for i in boxed],
            orientation="horizontal",
            positions=[positions[i] for i in boxed],
            widths=0.55,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "0.1", "linewidth": 2},
            boxprops={"facecolor": "#E8ECF2", "edgecolor": "0.45"},
            whiskerprops={"color": "0.45"},
            capprops={"color": "0.45"},
        )
        for i, box in zip(boxed, boxes["boxes"], strict=True):
            box.set_gid(f"box:{kind}:{rows[i].key}")
    rng = np.random.default_rng(0)
    for row, y in zip(rows, positions, strict=True):
        few = row.values.size <= 3
        jitter = np.zeros(row.values.size) if few else rng.uniform(-0.18, 0.18, row.values.size)
        dots = ax.scatter(
            row.values, y + jitter, s=50 if few else 14, color=row.colour, alpha=0.7, zorder=3
        )
        dots.set_gid(f"strip:{kind}:{row.key}")
    compact = len(rows) > ROOMY_UP_TO
    ax.set_yticks(positions, [row.name(compact) for row in rows])
    if compact:
        ax.tick_params(axis="y", labelsize=COMPACT_SIZE)
    ax.set_ylim(0.4, len(rows) + 0.6)
    set_scale(ax, np.concatenate([row.values for row in rows]), room=0.3)
    ax.grid(axis="x", color="0.9")
