"""The last guard before a chart is drawn (`save` calls `cap_texts`): every text the figure
holds made drawable, whatever reached it. Text from a trace already went through `label`;
this catches the rest (a title that joins several labels, a note, tick labels): glyphs the
font has, at most LINES_LIMIT lines of LINE_LIMIT characters, and no line wider than the
figure (a y tick label: than TICK_SHARE of it), its middle left out; a text placed far off the
figure, or at no finite place (a label pushed aside by many others, a value of a hostile
trace), is not drawn: FreeType cannot render a glyph that far away ("FT_Render_Glyph ...
raster overflow") and would take the whole chart with it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter

from acp_trace.quantities import count
from acp_trace.render.plots._common import TICK_SIZE, glyphs

LINE_LIMIT = 160  # characters of one line of any text a chart draws
LINES_LIMIT = 12  # lines of any text a chart draws
TICK_SHARE = 0.35  # of the figure's width: the widest label on a y axis
ROOM = 0.98  # of the figure's width: the widest line of any other text


def cap_texts(fig: Figure) -> None:
    """Cap every text of `fig` (see the module's docstring), tick labels included."""
    renderer: RendererBase = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg
    room = fig.bbox.width * ROOM
    for text in fig.findobj(Text):
        value = text.get_text()
        if value:
            new = fit(value, text, renderer, room)
            if new != value:
                text.set_text(new)
            if not _on_canvas(text, renderer):
                text.set_visible(False)
    for ax in fig.axes:
        for axis, share in ((ax.xaxis, 1.0), (ax.yaxis, TICK_SHARE)):
            ticks = axis.get_ticklabels()
            fitter = _Fitter(
                ticks[0] if ticks else Text(fontsize=TICK_SIZE), renderer, room * share
            )
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [fitter(item) for item in formatter.seq]
            elif isinstance(formatter, FuncFormatter) and not isinstance(formatter.func, _Fitted):
                formatter.func = _Fitted(formatter.func, fitter)


def _on_canvas(text: Text, renderer: RendererBase) -> bool:
    """Whether the text's box is finite and within one figure's size of the figure."""
    fig = text.get_figure(root=True)
    if fig is None or not text.get_visible():
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        box = text.get_window_extent(renderer)
    w, h = fig.bbox.width, fig.bbox.height
    corners = (box.x0, box.x1, box.y0, box.y1)
    if not all(math.isfinite(c) for c in corners):
        return False
    return bool(box.x1 > -w and box.x0 < 2 * w and box.y1 > -h and box.y0 < 2 * h)


def fit(value: str, like: Text, renderer: RendererBase, room: float) -> str:
    """`value` capped: known glyphs, LINES_LIMIT lines of LINE_LIMIT characters, each line
    at most `room` pixels wide in the font of `like`."""
    return "\n".join(_fit_line(line, like, renderer, room) for line in _capped(value))


def _capped(value: str) -> list[str]:
    known = glyphs()
    lines = value.split("\n")
    if len(lines) > LINES_LIMIT:
        lines = [*lines[: LINES_LIMIT - 1], f"({count(len(lines) - LINES_LIMIT + 1)} more lines)"]
    out = []
    for line in lines:
        if len(line) > LINE_LIMIT:
            line = line[: LINE_LIMIT - 1] + "…"
        out.append("".join(c if ord(c) in known and c.isprintable() else "?" for c in line))
    return out


def _fit_line(line: str, like: Text, renderer: RendererBase, room: float) -> str:
    for _ in range(3):  # glyphs differ in width: the cut may need another go
        width = _width(line, like, renderer)
        if width <= room or len(line) <= 1:
            return line
        keep = max(int(len(line) * room / width) - 2, 1)
        head = keep // 2
        line = line[:head] + "…" + line[len(line) - (keep - head) :]
    return line


def _width(line: str, like: Text, renderer: RendererBase) -> float:
    probe = Text(text=line, fontproperties=like.get_fontproperties())
    figure = like.get_figure()
    if figure is not None:
        probe.set_figure(figure)
    return float(probe.get_window_extent(renderer).width)


class _Fitter:
    """`fit` for the tick labels of one axis: each label measured once (the font, the
    renderer and the room are this axis's for good; a layout asks again for every draw)."""

    def __init__(self, like: Text, renderer: RendererBase, room: float) -> None:
        self.like, self.renderer, self.room = like, renderer, room
        self.fitted: dict[str, str] = {}

    def __call__(self, value: object) -> str:
        text = str(value)
        done = self.fitted.get(text)
        if done is None:
            done = self.fitted[text] = fit(text, self.like, self.renderer, self.room)
        return done


class _Fitted:
    """A tick formatter's function with its labels fitted."""

    def __init__(self, func: Callable[..., Any], fitter: _Fitter) -> None:
        self.func, self.fitter = func, fitter

    def __call__(self, x: float, pos: int | None = None) -> str:
        return self.fitter(self.func(x, pos))
