"""Charts for bug reports and notebooks: the replay gap, one replay's timeline and its weight,
latency.

Every function returns a `matplotlib.figure.Figure` on an Agg canvas (no display needed, no
pyplot state touched); `save` writes one to PNG or SVG. Charts show method names, update kinds,
session ids, agent names and versions and numbers, never message contents. Ordering-only
traces (no timestamps) are left out, with a note in the figure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from acp_trace.analysis.timeline import untimed_traces
from acp_trace.errors import UsageError
from acp_trace.files import replacing
from acp_trace.render.plots._common import DPI
from acp_trace.render.plots._fit import cap_texts
from acp_trace.render.plots.gap import gap_figure, gap_table
from acp_trace.render.plots.latency import latency_figure
from acp_trace.render.plots.replay import replay_figure
from acp_trace.render.plots.replay_window import Pick, choose_window
from acp_trace.render.plots.weight import weight_figure

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

KINDS = ("gap", "replay", "latency", "weight")
PICKED = ("replay", "weight")  # the kinds drawn for one replay (--session, --request, --trace)
SUFFIXES = (".png", ".svg")

__all__ = [
    "KINDS",
    "Pick",
    "choose_window",
    "figure",
    "gap",
    "gap_figure",
    "gap_table",
    "latency",
    "latency_figure",
    "plot",
    "replay",
    "replay_figure",
    "save",
    "weight",
    "weight_figure",
]


def gap(a: Analysis) -> Figure:
    """The distribution of the replay gaps of an analysis (histogram and ECDF)."""
    return gap_figure(a.replays, untimed_traces(a.timeline))


def replay(
    a: Analysis,
    *,
    session: str | None = None,
    request: str | None = None,
    trace: str | None = None,
) -> Figure:
    """The timeline of one replay: the slowest of those that match `session` (resumed or
    child), `request` (its id) and `trace` (path or file name)."""
    pick = Pick(session=session, request=request, trace=trace)
    return replay_figure(a.facts, a.timeline, pick=pick)


def weight(
    a: Analysis,
    *,
    session: str | None = None,
    request: str | None = None,
    trace: str | None = None,
) -> Figure:
    """What one replay weighs (the same replay `replay` draws for the same choice): its
    history's bytes over time by update kind, its lines against the clients' limits."""
    pick = Pick(session=session, request=request, trace=trace)
    return weight_figure(a.facts, a.timeline, a.weights, a.weight, pick=pick)


def latency(a: Analysis) -> Figure:
    """Request to response per method, and prompt-turn phases."""
    return latency_figure(a.timeline, a.turns, untimed_traces(a.timeline))


def figure(
    a: Analysis,
    kind: str,
    *,
    session: str | None = None,
    request: str | None = None,
    trace: str | None = None,
) -> Figure:
    """The chart of one kind: gap, replay or weight (chosen by session, request, trace) or
    latency."""
    if kind == "gap":
        return gap(a)
    if kind == "replay":
        return replay(a, session=session, request=request, trace=trace)
    if kind == "latency":
        return latency(a)
    if kind == "weight":
        return weight(a, session=session, request=request, trace=trace)
    raise UsageError(f"--kind {kind}: expected one of {', '.join(KINDS)}")


def save(fig: Figure, path: str | os.PathLike[str], writer: str = "plot") -> Path:
    """Write a figure as PNG or SVG (by the file's suffix), 1200 px wide for PNG; a stream
    (`-`, `/dev/fd/N`, a device or FIFO) without a suffix gets PNG. The file names the
    command that drew it (PNG `Software`, SVG `Creator`: `acp-trace plot`), which is how
    `plot -o` knows a chart it may replace (`made_by`).

    Written through `acp_trace.files` (a temporary file renamed over the target: a symlink
    there is replaced, not followed), private (0600) like every output: a chart holds no
    message contents, but it names agents, sessions and timings. The directory must exist."""
    out = Path(path)
    suffix = chart_format(path)
    tag = f"{MAKER} {writer}"
    metadata = {"Date": None, "Creator": tag} if suffix == "svg" else {"Software": tag}
    cap_texts(fig)
    with replacing(path) as temp:
        fig.savefig(temp, format=suffix, dpi=DPI, metadata=metadata)
    return out


MAKER = "acp-trace"


def made_by(writer: str) -> Callable[[Path], bool]:
    """A test of a file: True when it is a chart `save` wrote for `writer` (its PNG text
    chunks or SVG metadata, at the start of the file, name it)."""

    def made(path: Path) -> bool:
        with open(path, "rb") as handle:
            head = handle.read(1 << 14)
        tag = f"{MAKER} {writer}".encode()
        if head.startswith(b"\x89PNG"):
            return b"Software\x00" + tag in head
        return b"<svg" in head and b"<dc:title>" + tag + b"</dc:title>" in head

    return made


def chart_format(path: str | os.PathLike[str], option: str = "-o") -> str:
    """`png` or `svg`, by the suffix of `path`; PNG for a stream without one. UsageError for
    any other file name."""
    from acp_trace.files import is_stream

    suffix = Path(path).suffix.lower()
    if suffix in SUFFIXES:
        return suffix[1:]
    if is_stream(path):
        return "png"
    raise UsageError(f"{option} {os.fspath(path)}: expected a file name ending in .png or .svg")


def plot(
    paths: Paths,
    output: str | os.PathLike[str],
    kind: str = "gap",
    *,
    session: str | None = None,
    request: str | None = None,
    trace: str | None = None,
    marker_meta: str | None = None,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Read traces, draw one chart and save it to `output` (.png or .svg)."""
    from acp_trace.analysis.front import analyze

    if kind not in KINDS:
        raise UsageError(f"--kind {kind}: expected one of {', '.join(KINDS)}")
    if Path(output).suffix.lower() not in SUFFIXES:
        raise UsageError(f"{output}: the output must end in .png or .svg")
    a = analyze(paths, marker_meta=marker_meta, fmt=fmt, progress=progress)
    return save(figure(a, kind, session=session, request=request, trace=trace), output)
