"""The weight chart: what one replay weighs and which client it would have hurt, for an issue.

Top: the history's bytes accumulating over time (ms after the request), stacked by update kind
(the legend gives each kind's total), the covered children's bytes as a band of their own.
Bottom: each line's length on a log axis against the known client limits up to the first one
it stays under; the lines over a limit in red, the first over each limit named, the largest
line labelled. Both: the replay's end (`gap_start`'s words), where a quiet-window client would
have taken the replay for over (`quiet_end_ms`), and the response. Chosen like the replay
chart (weight_series.py bounds what is drawn at any size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.ticker import FuncFormatter, MaxNLocator

from acp_trace.analysis.replays import Facts, Window
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.quantities import count, counted, duration
from acp_trace.render.gap_source import gap_start
from acp_trace.render.plots._common import (
    TEXT_SIZE,
    add_note,
    agent_label,
    axis_labels,
    empty_figure,
    label,
    new_figure,
    plain_ticks,
    title,
    untimed_note,
)
from acp_trace.render.plots._labels import RowLabel, row_labels, settle_layout
from acp_trace.render.plots.replay_window import Pick, choose_window
from acp_trace.render.plots.weight_series import CHILDREN, Series, series
from acp_trace.render.weight_facts import line_text, quiet_text, tool_of
from acp_trace.weight import ReplayWeight, WeightOptions

HEADING = "Replay weight"
NOTHING = ": no replaying session/resume or session/load with timestamps"
COLOURS = ["#4C72B0", "#DD8452", "#55A868", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD"]  # fmt: skip
CHILD_COLOUR = "#C44E52"
OVER_COLOUR = "#C44E52"
BOX = {"facecolor": "white", "edgecolor": "none", "pad": 1.5, "alpha": 0.9}
MARKS = {  # the moments marked on both panels: colour, line style
    "replay-end": ("#C44E52", "-"),
    "quiet-end": ("#8172B3", "--"),
    "response": ("0.1", "-"),
}


def weight_figure(
    facts: Facts,
    tl: pl.DataFrame,
    weights: list[ReplayWeight],
    options: WeightOptions,
    pick: Pick | None = None,
) -> Figure:
    """The weight chart of the slowest replay `pick` matches (`weights`: one per replays-table
    row, as `Analysis.weights`)."""
    from acp_trace.render.weight_facts import weight_rows

    untimed = untimed_traces(tl)
    notes = untimed_note(untimed)
    pick = pick or Pick()
    w, candidates = choose_window(facts, tl, untimed, pick)
    if w is None:
        return empty_figure(HEADING, f"No replay to show{NOTHING}.", notes)
    weight = weights[weight_rows(facts)[(w.req_row, w.session)]]
    end = _at(tl, w, w.end_row)
    data = series(tl, w, weight, options, end)
    fig, (top, bottom) = new_figure(nrows=2, height_ratios=[3.0, 2.0])
    title(fig, f"{HEADING}: {w.method} of {label(w.session)} (request id {label(w.request_id)})")
    _stack(top, data, weight, tl, w)
    _lengths(bottom, data, weight, options, tl)
    marks = _marks(tl, w, weight, options, end)
    for ax in (top, bottom):
        for x, name, _text in marks:
            colour, style = MARKS[name]
            ax.axvline(x, color=colour, linestyle=style, linewidth=1.5, zorder=1, gid=name)
        ax.set_xlim(-0.02 * data.right, data.right * 1.04)
        plain_ticks(ax)
    if data.bands:
        top.legend(
            loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=TEXT_SIZE, borderaxespad=0
        )
    if candidates > 1:
        among = f" for {label(pick.describe(), 80)}" if pick.chosen else ""
        notes.append(
            f"The slowest of {count(candidates)} replaying requests{among}; "
            "choose another with --trace, --session or --request."
        )
    add_note(fig, [*notes, *_quiet_note(weight, options)])
    settle_layout(top)
    labels = [RowLabel(x, text, f"{name}-label") for x, name, text in marks]
    drawn = row_labels(top, labels, top.get_ylim()[1] * 0.93, top.get_ylim()[1] * 0.88)
    for text in [*drawn, *_over_labels(bottom, data)]:
        text.set_bbox(BOX)
    return fig


def _at(tl: pl.DataFrame, w: Window, row: int | None) -> float | None:
    t = tl["t_ms"]
    if row is None or t[row] is None or t[w.req_row] is None:
        return None
    return float(t[row] - t[w.req_row])


def _stack(ax: Axes, data: Series, weight: ReplayWeight, tl: pl.DataFrame, w: Window) -> None:
    """The bands, one PolyCollection each, bottom to top largest first."""
    bottom = np.zeros_like(data.grid)
    for i, band in enumerate(data.bands):
        colour = CHILD_COLOUR if band.name == CHILDREN else COLOURS[i % len(COLOURS)]
        top = bottom + band.values
        ax.fill_between(
            data.grid, bottom, top, step="post", color=colour, alpha=0.85, linewidth=0,
            label=f"{label(band.name)}: {count(band.total)} bytes", gid=f"band:{band.name}",
        )  # fmt: skip
        bottom = top
    total = float(bottom[-1]) if len(bottom) else 0.0
    ax.set_ylim(0, max(total, 1.0) * 1.18)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # bytes: whole numbers only
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: count(int(v))))
    agent = agent_label(tl["agent"][w.req_row], tl["agent_version"][w.req_row])
    own = sum(b.total for b in data.bands if b.name != CHILDREN)
    updates = sum(b.updates for b in data.bands if b.name != CHILDREN)
    heading = (
        f"{agent} · {count(own)} history bytes in {counted(updates, 'update')}"
        f" · children {count(weight.children_bytes)} bytes\ntrace {label(Path(w.trace).name, 80)}"
    )
    axis_labels(ax, "", "history bytes, accumulated", heading)
    if not data.bands:
        ax.text(0.5, 0.5, "no history update in this replay", transform=ax.transAxes,
                ha="center", va="center", fontsize=TEXT_SIZE + 1, gid="no-history")  # fmt: skip


def _lengths(
    ax: Axes, data: Series, weight: ReplayWeight, options: WeightOptions, tl: pl.DataFrame
) -> None:
    """Each line's length (log), the limits up to the first above the longest, those over."""
    thinned = len(data.line_t) < data.lines
    ax.scatter(data.line_t, data.line_bytes, s=8, color="0.55", linewidths=0, gid="lines",
               label="_nolegend_")  # fmt: skip
    ax.scatter(data.over_t, data.over_bytes, s=22, color=OVER_COLOUR, linewidths=0, gid="over")
    longest = float(data.line_bytes.max()) if len(data.line_bytes) else 1.0
    shown = [lim for lim in options.limits if lim.value <= longest]
    above = [lim for lim in options.limits if lim.value > longest][:1]
    for lim in [*shown, *above]:
        ax.axhline(lim.value, color="0.3", linestyle=":", linewidth=1, gid=f"limit:{lim.name}")
        ax.annotate(
            f"{label(lim.name, 40)} limit", xy=(1.0, lim.value), xycoords=("axes fraction", "data"),
            xytext=(4, 0), textcoords="offset points", ha="left", va="center",
            fontsize=TEXT_SIZE, color="0.3", gid=f"limit-label:{lim.name}",
        )  # fmt: skip
    top = max(longest, *(lim.value for lim in above)) if above else longest
    ax.set_yscale("log")
    ax.set_ylim(max(1.0, float(data.line_bytes.min()) / 2 if len(data.line_bytes) else 1.0),
                top * 4)  # fmt: skip
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: count(round(v))))
    largest = _largest(ax, data, weight, options, tl)
    what = "each line's length" + (" (the longest per time bin)" if thinned else "")
    over = f"; {counted(data.over_count, 'line')} over a limit" if data.over_count else ""
    heading = f"{what}{over}" + (f"\n{largest}" if largest else "")
    axis_labels(ax, "time since the request (ms)", "line bytes (log)", heading)


def _largest(
    ax: Axes, data: Series, weight: ReplayWeight, options: WeightOptions, tl: pl.DataFrame
) -> str | None:
    """A star on the largest line of the session, and the words for it."""
    if weight.largest_row is None or weight.largest_update_bytes is None:
        return None
    tool = tool_of(tl, weight.largest_row)
    text = "largest line: " + label(line_text(weight.largest_update_kind, tool, None), 80)
    text += f", {count(weight.largest_update_bytes)} bytes"
    passed = options.largest_limit_passed(weight.largest_update_bytes)
    if passed is not None:
        text += f", over the {label(passed.name, 40)} limit"
    at = np.flatnonzero(data.line_bytes == weight.largest_update_bytes)
    if len(at):
        x = float(data.line_t[at[0]])
        ax.scatter([x], [weight.largest_update_bytes], marker="*", s=160, color=OVER_COLOUR,
                   edgecolors="0.1", linewidths=0.6, zorder=4, gid="largest-line")  # fmt: skip
    return text


def _over_labels(ax: Axes, data: Series) -> list[Annotation]:
    """The first line over each limit, named by the limit, packed along the top of the panel."""
    labels = [RowLabel(o.t, f"over {label(o.limit.name, 30)}", "over-label") for o in data.over]
    high = ax.get_ylim()[1]
    return row_labels(ax, labels, high / 1.6, data.over[-1].length if data.over else high)


def _marks(
    tl: pl.DataFrame, w: Window, weight: ReplayWeight, options: WeightOptions, end: float | None
) -> list[tuple[float, str, str]]:
    """(ms after the request, name, text) of the replay's end, the quiet-window end and the
    response."""
    out: list[tuple[float, str, str]] = []
    origin, source = w.sessions[w.session].gap_origin()
    at = _at(tl, w, origin)
    if at is not None and source is not None:
        out.append((at, "replay-end", f"{gap_start(source)} {duration(at)}"))
    if weight.quiet_end_ms is not None:
        after = weight.updates_after_quiet_end or 0
        text = f"quiet-window end {duration(weight.quiet_end_ms)}: {count(after)} after"
        out.append((weight.quiet_end_ms, "quiet-end", text))
    if end is not None:
        what = {"response": "response", "error": f"error {w.error_code} response"}
        out.append((end, "response", f"{what.get(w.end, 'connection ended')} {duration(end)}"))
    return out


def _quiet_note(weight: ReplayWeight, options: WeightOptions) -> list[str]:
    how = quiet_text(options.quiet_window_ms, options.quiet_cap_ms)
    if weight.quiet_end_ms is None:
        return [
            f"A client that takes the replay for over after {how} would have waited for the response."
        ]
    after = weight.updates_after_quiet_end or 0
    return [
        f"A client that takes the replay for over after {how} would have stopped at "
        f"{duration(weight.quiet_end_ms)},",
        f"and taken the {counted(after, 'history update')} after it for live ones.",
    ]
