"""What every chart shares: the Agg canvas, size and fonts, safe labels, notes, empty figures.

Figures are built on `matplotlib.figure.Figure` with an explicit `FigureCanvasAgg`, never through
pyplot, so building one needs no display and leaves the caller's pyplot backend alone (a
notebook's inline backend keeps working).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

import numpy as np
from matplotlib import font_manager, ft2font
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import FuncFormatter, NullFormatter
from numpy.typing import NDArray

from acp_trace.quantities import count, trimmed

FIGSIZE = (12.0, 6.75)  # 1200 x 675 px at DPI
DPI = 100
TITLE_SIZE = 14
LABEL_SIZE = 12
TICK_SIZE = 10
TEXT_SIZE = 10
LOG_SPAN = 100.0  # max/min of the positive values beyond which an axis goes logarithmic
FONT_FAMILY = "DejaVu Sans"  # ships with matplotlib: the same glyphs everywhere
PERCENTILES = (50, 90, 99)


def new_figure(
    ncols: int = 1,
    width_ratios: list[float] | None = None,
    nrows: int = 1,
    height_ratios: list[float] | None = None,
) -> tuple[Figure, list[Axes]]:
    """A 12x6.75 inch figure at 100 dpi on an Agg canvas, with a grid of axes (row by row)."""
    fig = blank_figure()
    grid = fig.subplots(
        nrows, ncols, squeeze=False, width_ratios=width_ratios, height_ratios=height_ratios
    )
    axes = [ax for row in grid for ax in row]
    for ax in axes:
        ax.tick_params(labelsize=TICK_SIZE)
    return fig, axes


def blank_figure() -> Figure:
    """A 12x6.75 inch figure at 100 dpi on an Agg canvas, with constrained layout."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def title(fig: Figure, text: str) -> None:
    """The figure's title."""
    fig.suptitle(text, fontsize=TITLE_SIZE, fontfamily=FONT_FAMILY)


def axis_labels(ax: Axes, x: str, y: str, heading: str | None = None) -> None:
    """Axis labels (with their units) and an optional axes title."""
    ax.set_xlabel(x, fontsize=LABEL_SIZE)
    ax.set_ylabel(y, fontsize=LABEL_SIZE)
    if heading:
        ax.set_title(heading, fontsize=LABEL_SIZE)


def add_note(fig: Figure, lines: Iterable[str]) -> None:
    """Notes at the bottom of the figure (what was left out and why)."""
    text = "\n".join(lines)
    if not text:
        return
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        height = 0.035 * (text.count("\n") + 1) + 0.01
        engine.set(rect=(0.0, height, 1.0, 1.0 - height))
    fig.text(0.01, 0.01, text, fontsize=TEXT_SIZE, ha="left", va="bottom", gid="note", color="0.3")


def empty_figure(heading: str, message: str, notes: Iterable[str] = ()) -> Figure:
    """A figure that says clearly that there is nothing to draw, and why."""
    fig, (ax,) = new_figure()
    title(fig, heading)
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=LABEL_SIZE + 2, gid="empty")
    add_note(fig, notes)
    return fig


@cache
def glyphs() -> frozenset[int]:
    """The code points the charts' font has a glyph for."""
    path = font_manager.findfont(font_manager.FontProperties(family=FONT_FAMILY))
    return frozenset(ft2font.FT2Font(path).get_charmap())


def label(value: object, limit: int = 48) -> str:
    """Text from a trace made safe for a chart: printable glyphs the font has, no mathtext,
    not hidden from legends by a leading underscore, at most `limit` characters."""
    text = "unknown" if value is None else str(value)
    known = glyphs()
    text = "".join(c if c.isprintable() and ord(c) in known else "?" for c in text)
    if len(text) > limit:  # keep both ends: ids differ at the start or the end
        head = (limit - 1) // 2
        text = text[:head] + "…" + text[len(text) - (limit - 1 - head) :]
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def natural(text: str | None) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders `0.9.0` before `0.10.0` and `agent-2` before `agent-10`; a run
    of digits too long to convert (Python refuses over 4,300) sorts after the numbers."""
    parts = re.split(r"(\d+)", text or "")
    return tuple(
        ((0, int(p)) if len(p) <= 4000 else (2, p)) if p.isdecimal() else (1, p) for p in parts if p
    )


def agent_label(agent: str | None, version: str | None) -> str:
    """`name version`, or `unknown agent` (at most 48 + 1 + 24 characters)."""
    name = label(agent) if agent else "unknown agent"
    return f"{name} {label(version, 24)}" if version else name


def unscoped(names: Iterable[str]) -> dict[str, str]:
    """Each name as a person tells it apart: an npm package without its scope
    (`@agentclientprotocol/claude-agent-acp` is `claude-agent-acp`), unless two of the names
    would then read the same (both keep their scope)."""
    names = list(dict.fromkeys(names))
    short = {n: n.split("/", 1)[1] if n.startswith("@") and "/" in n[1:-1] else n for n in names}
    seen: dict[str, int] = {}
    for value in short.values():
        seen[value] = seen.get(value, 0) + 1
    return {n: short[n] if seen[short[n]] == 1 else n for n in names}


def agent_labels(
    pairs: Iterable[tuple[str | None, str | None]],
) -> dict[tuple[str | None, str | None], str]:
    """`agent_label` of each (agent, version), the agent without its npm scope
    (`claude-agent-acp 0.101.0`) unless two agent versions would then read the same."""
    pairs = list(dict.fromkeys(pairs))
    full = {p: agent_label(*p) for p in pairs}
    short = {
        p: agent_label(*(unscoped([p[0]]).get(p[0], p[0]) if p[0] else None, p[1])) for p in pairs
    }
    clash = len(set(short.values())) < len(set(full.values()))
    return full if clash else short


def plural(n: int, word: str) -> str:
    """`word` as it goes with the number `n`: 1 replay, 2 replays."""
    return word if n == 1 else word + "s"


def plain(value: float, _pos: object = None) -> str:
    """A tick label as a person writes the number: `0`, `0.25`, `1,500`, `10,000`; never an
    offset (`+1.36e3`) or a power of ten."""
    return trimmed(value, 6)


def plain_ticks(ax: Axes) -> None:
    """Plain numbers on the x axis (major ticks only; minor ticks unlabelled)."""
    ax.xaxis.set_major_formatter(FuncFormatter(plain))
    ax.xaxis.set_minor_formatter(NullFormatter())


def spans_decades(values: NDArray[np.float64]) -> bool:
    """True when the positive values span more than two decades (max/min > 100)."""
    positive = values[values > 0]
    return bool(positive.size >= 2 and positive.max() / positive.min() > LOG_SPAN)


def set_scale(ax: Axes, values: NDArray[np.float64], room: float = 1.0) -> str:
    """Give the x axis the scale and limits the values need, with plain tick labels: `log`
    when the positive values span decades, `symlog` (linear near zero) when they also include
    zeros, else `linear` from 0. `room` widens the right end (a factor on a log axis, a
    fraction of the span on a linear one) for labels. Returns the scale."""
    low, high = float(values.min()), float(values.max())
    positive = values[values > 0]
    if not spans_decades(values):
        scale = "linear"
        top = max(high, 0.0) or 1.0
        bottom = min(low, 0.0)
        span = top - bottom
        limits = (bottom - 0.02 * span, top + (0.04 + room * 0.06) * span)
    elif positive.size == values.size:
        scale = "log"
        ax.set_xscale(scale)
        limits = (float(positive.min()) / 1.6, high * 1.6 * (1.0 + room))
    else:
        # Linear from the lowest value to the decade below the smallest positive one, then log.
        scale = "symlog"
        linthresh = float(10 ** np.floor(np.log10(positive.min())))
        ax.set_xscale(scale, linthresh=linthresh, linscale=1.0)
        limits = (min(low, 0.0) - 0.15 * linthresh, high * 1.6 * (1.0 + room))
    ax.set_xlim(*limits)
    plain_ticks(ax)  # after set_xscale, which resets the formatters
    return scale


def untimed_note(traces: list[str]) -> list[str]:
    """The note that says ordering-only traces were left out."""
    if not traces:
        return []
    n = len(traces)
    return [
        f"{count(n)} ordering-only {plural(n, 'trace')} left out: {'they have' if n > 1 else 'it has'} no timestamps."
    ]
