"""Labels along a row that never hide each other: each sits under the value it names unless a
neighbour or the edge of the axes is in the way; then it moves sideways along the row, and a
thin line leads back to its value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.layout_engine import LayoutEngine
from matplotlib.text import Annotation

from acp_trace.render.plots._common import TEXT_SIZE

PAD_PX = 12.0  # between two labels, and between a label and the edge of the axes
MOVED_PX = 3.0  # a label this far from its value gets a leader line
LEADER = {"arrowstyle": "-", "color": "0.45", "lw": 0.8, "shrinkA": 0, "shrinkB": 0}


@dataclass(frozen=True)
class RowLabel:
    """A label for the value `x` (data units)."""

    x: float
    text: str
    gid: str


def settle_layout(ax: Axes) -> None:
    """Run the figure's layout now, so that data positions map to their final pixels.
    Row labels are left out of the layout, so it does not change once they are added."""
    fig = ax.get_figure(root=True)
    assert fig is not None
    engine = fig.get_layout_engine()
    if isinstance(engine, LayoutEngine):
        engine.execute(fig)


def row_labels(
    ax: Axes,
    labels: list[RowLabel],
    y: float,
    y_mark: float,
    size: float | None = None,
    pad: float = PAD_PX,
) -> list[Annotation]:
    """Draw `labels` centred at height `y` (data units), packed `pad` pixels apart so they do
    not overlap and stay inside the axes; a moved label gets a line to (x, y_mark). Call
    `settle_layout` first."""
    if not labels:
        return []
    fig = ax.get_figure(root=True)
    assert fig is not None
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvas
    style: dict[str, Any] = {
        "fontsize": size or TEXT_SIZE,
        "ha": "center",
        "va": "center",
        "color": "0.1",
    }
    widths = []
    for lab in labels:
        probe = ax.text(0, y, lab.text, **style)
        widths.append(probe.get_window_extent(renderer).width)
        probe.remove()
    to_px = ax.transData.transform
    y_px = float(to_px((labels[0].x, y))[1])
    wanted = [float(to_px((lab.x, y))[0]) for lab in labels]
    box = ax.get_window_extent(renderer)
    out = []
    centres = pack(wanted, widths, box.x0, box.x1, pad)
    for lab, want, centre in zip(labels, wanted, centres, strict=True):
        moved = abs(centre - want) > MOVED_PX
        text = ax.annotate(
            lab.text,
            xy=(lab.x, y_mark),
            xytext=(float(ax.transData.inverted().transform((centre, y_px))[0]), y),
            gid=lab.gid,
            annotation_clip=False,
            arrowprops=LEADER if moved else None,
            **style,
        )
        text.set_in_layout(False)
        out.append(text)
    return out


def pack(
    wanted: list[float], widths: list[float], left: float, right: float, pad: float = PAD_PX
) -> list[float]:
    """Centres (pixels) for labels that want to be centred at `wanted`: in the same order,
    `pad` apart, inside [left, right] when they fit."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    starts = [0.0] * len(wanted)
    edge = left + pad
    for i in order:  # left to right: no overlap with the label before
        starts[i] = max(wanted[i] - widths[i] / 2, edge)
        edge = starts[i] + widths[i] + pad
    edge = right - pad
    for i in reversed(order):  # right to left: back inside the right edge
        starts[i] = min(starts[i], edge - widths[i])
        edge = starts[i] - pad
    return [s + w / 2 for s, w in zip(starts, widths, strict=True)]
