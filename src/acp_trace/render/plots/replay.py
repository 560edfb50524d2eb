"""The replay chart: one replaying request as a timeline a person reads in seconds.

One lane per session (the resumed session on top, announced children below it): a tick per
history update, the replay_complete marker, live updates, the state_update snapshot, agent
requests, a vendor end-of-replay event; the request at 0 ms and the response as vertical lines;
the gap annotated on each lane, saying what it is measured from in the words of
`gap.gap_start` (the replay_complete marker, else a vendor end-of-replay event, never called a
marker, else the last history update). When the
agent wrote to stderr during the window, a last lane shows those lines and the phases they
name (replay_stderr.py), so the wait in the gap is explained by the agent's own words.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from acp_trace.analysis.replays import Facts, outcome
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.quantities import count, duration
from acp_trace.render.plots import replay_stderr
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
from acp_trace.render.plots._labels import settle_layout
from acp_trace.render.plots.gap import FALLBACK, source_text
from acp_trace.render.plots.replay_window import (
    Lane,
    Pick,
    View,
    choose_window,
    lanes_of,
    window_events,
    window_stderr,
)

HEADING = "Replay timeline"
LANE_LABEL = 24  # characters of a session id on the y axis
NOTHING = ": no replaying session/resume or session/load with timestamps"
STYLES: dict[str, dict[str, Any]] = {
    "history": {"marker": "|", "s": 260, "color": "#4C72B0", "label": "history update"},
    "live": {"marker": "|", "s": 260, "color": "#DD8452", "label": "live update"},
    "state": {"marker": "s", "s": 70, "color": "#8172B3", "label": "state_update"},
    "marker": {"marker": "D", "s": 100, "color": "#C44E52", "label": "replay_complete marker"},
    "vendor": {
        "marker": "P",
        "s": 90,
        "color": "#55A868",
        "label": "vendor end-of-replay event",
    },
    "unknown": {"marker": "|", "s": 260, "color": "0.6", "label": "other update"},
    "request": {"marker": "X", "s": 80, "color": "black", "label": "agent request"},
}


def replay_figure(
    facts: Facts,
    tl: pl.DataFrame,
    pick: Pick | None = None,
) -> Figure:
    """The timeline of one replay: the slowest of those `pick` matches (a `pick` that matches
    none is a UsageError listing the choices)."""
    untimed = untimed_traces(tl)
    notes = untimed_note(untimed)
    pick = pick or Pick()
    w, candidates = choose_window(facts, tl, untimed, pick)
    if w is None:
        return empty_figure(HEADING, f"No replay to show{NOTHING}.", notes)
    stderr = window_stderr(tl, w)
    view = View(tl, w, lanes_of(w, stderr.height), window_events(tl, w), None, stderr)
    view.end = view.at(w.end_row)
    zoom = view.zoom()
    bunched = burst(view.events)
    fig, axes = new_figure(nrows=2 if zoom or bunched else 1)
    title(fig, f"{HEADING}: {w.method} of {label(w.session)} (request id {label(w.request_id)})")
    _draw(axes[0], view, None)
    panels = [(axes[0], view)]  # each panel with the view it shows: its lanes, its x axis
    if bunched:
        ordered = in_arrival_order(view)
        _draw(axes[1], ordered, ordered.events.height + 1.0, burst=view.events)
        panels.append((axes[1], ordered))  # no stderr lane: phases are spans of time
    elif zoom:
        _draw(axes[1], view, zoom)
        panels.append((axes[1], view))
    axes[0].legend(
        loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=TEXT_SIZE, borderaxespad=0
    )
    if candidates > 1:
        among = f" for {label(pick.describe(), 80)}" if pick.chosen else ""
        notes.append(
            f"The slowest of {count(candidates)} replaying requests{among}; "
            "choose another with --trace, --session or --request."
        )
    add_note(fig, notes)
    if stderr.height:
        settle_layout(axes[0])  # the phase labels are packed in pixels: the layout is final
        for ax, shown in panels:
            for lane in shown.lanes:
                if lane.kind == replay_stderr.KIND:
                    replay_stderr.add_labels(ax, shown, lane)
    return fig


def burst(events: pl.DataFrame) -> bool:
    """True when time cannot tell the updates apart: the tap stamped at least half of them at
    the same moment as another (a burst read at once), so on a time axis every history tick
    would hide under the marker drawn at that moment."""
    t = events["t"].drop_nulls()
    return t.len() >= 3 and t.n_unique() * 2 <= t.len()


def in_arrival_order(view: View) -> View:
    """The updates of the window at their place in the order they arrived (1, 2, ...) on the
    x axis instead of their time: the zoom of a burst (the session lanes only)."""
    events = view.events.with_columns(pl.int_range(1, pl.len() + 1).cast(pl.Float64).alias("t"))
    lanes = [lane for lane in view.lanes if lane.kind == "session"]
    return View(view.tl, view.w, lanes, events, None, view.stderr.clear())


def _draw(ax: Axes, view: View, zoom_to: float | None, burst: pl.DataFrame | None = None) -> None:
    """One panel: the whole window, or (`zoom_to`) its first milliseconds; or, for a `burst`
    (the window's events with their times), `view` is in arrival order (`in_arrival_order`)."""
    _draw_events(ax, view, legend=zoom_to is None)
    _draw_ends(ax, view, labels=zoom_to is None)
    if zoom_to is None:
        _draw_gaps(ax, view)
    last = view.events["t"].max()
    whole = max(view.end or 0.0, last if isinstance(last, float) else 0.0, 1.0)
    right = zoom_to if zoom_to is not None else whole
    ax.set_xlim(-0.03 * right, right * 1.06)
    plain_ticks(ax)
    ax.set_ylim(min(lane.y for lane in view.lanes) - 0.6, 0.9)
    names = [LANE_KINDS[lane.kind][0](view, lane) for lane in view.lanes]
    ax.set_yticks([lane.y for lane in view.lanes], names)
    ax.tick_params(axis="y", length=0)
    if burst is not None:
        t = burst["t"].drop_nulls().to_list()
        most = max(t.count(value) for value in set(t))
        some = f"all {count(len(t))}" if most == len(t) else f"{count(most)} of the {count(len(t))}"
        heading = (
            f"Zoom on the updates in the order they arrived (the tap stamped {some} at one moment)"
        )
        axis_labels(ax, "update, in arrival order", "session", heading)
    elif zoom_to is None:
        axis_labels(ax, "time since the request (ms)", "session", _subtitle(view))
    else:
        heading = f"Zoom on the updates: the first {duration(zoom_to)}"
        axis_labels(ax, "time since the request (ms)", "session", heading)


def _session_name(view: View, lane: Lane) -> str:
    stats = view.w.sessions[lane.key]
    about = f"{stats.history_updates} history"
    if stats.parent is not None:
        about += f", child of {label(stats.parent, LANE_LABEL)}"
    return f"{label(lane.key, LANE_LABEL)}\n({about})"


def _subtitle(view: View) -> str:
    w = view.w
    stats = w.sessions[w.session]
    agent = agent_label(view.tl["agent"][w.req_row], view.tl["agent_version"][w.req_row])
    return (
        f"{agent} · outcome {outcome(w, stats)} · {stats.history_updates} history updates\n"
        f"trace {label(Path(w.trace).name, 80)}"
    )


def _draw_events(ax: Axes, view: View, legend: bool) -> None:
    # one legend entry per class, from the first panel only
    labelled: set[str] = set() if legend else {*STYLES, *replay_stderr.LEGEND}
    for lane in view.lanes:
        ax.axhline(lane.y, color="0.88", linewidth=1, zorder=0, gid=f"lane:{lane.key}")
        LANE_KINDS[lane.kind][1](ax, view, lane, labelled)


def _draw_session(ax: Axes, view: View, lane: Lane, labelled: set[str]) -> None:
    """A session's updates and the agent's requests on it, one artist per class."""
    mine = view.events.filter(pl.col("session") == lane.key)
    for cls, style in STYLES.items():
        t = mine.filter(pl.col("cls") == cls)["t"].to_list()
        if not t:
            continue
        kwargs = dict(style)
        if cls in labelled:
            kwargs["label"] = "_nolegend_"
        labelled.add(cls)
        dots = ax.scatter(t, [lane.y] * len(t), zorder=3, linewidths=1.5, **kwargs)
        dots.set_gid(f"{cls}:{lane.key}")


def _draw_ends(ax: Axes, view: View, labels: bool) -> None:
    """The request line at 0 and the response (or connection end) line."""
    w = view.w
    ax.axvline(
        0,
        color="#55A868",
        linewidth=1.5,
        zorder=1,
        gid="request",
        label=f"request ({w.method})" if labels else "_nolegend_",
    )
    if view.end is None:
        return
    what = {"response": "response", "error": f"error {w.error_code} response"}
    text = what.get(w.end, "connection ended")
    ax.axvline(
        view.end,
        color="0.1",
        linewidth=2,
        zorder=1,
        gid="response",
        label=text if labels else "_nolegend_",
    )
    if not labels:
        return
    ax.annotate(
        f"{text} at {duration(view.end)}",
        xy=(view.end, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(-4, -4),
        textcoords="offset points",
        ha="right",
        va="top",
        fontsize=TEXT_SIZE,
        gid="response-label",
    )


def _draw_gaps(ax: Axes, view: View) -> None:
    """Per lane: the gap to the response, in ms, from its origin (`gap_origin`: the marker,
    else a vendor end-of-replay event, else the last history update), which the text names."""
    w, end = view.w, view.end
    if end is None or w.end not in ("response", "error"):
        return
    for lane in view.lanes:
        if lane.kind != "session":
            continue
        name, y = lane.key, lane.y
        stats = w.sessions[name]
        origin, source = stats.gap_origin()
        since = view.at(origin)
        if since is None or source is None:
            continue
        gap = end - since
        marked = source != FALLBACK
        text = f"{source_text(source)} {duration(gap)}"
        ax.annotate(
            "",
            xy=(end, y + 0.22),
            xytext=(since, y + 0.22),
            arrowprops={
                "arrowstyle": "<->",
                "color": "#C44E52",
                "lw": 1.5,
                "linestyle": "-" if marked else "--",
            },
        )
        ax.text(
            (since + end) / 2,
            y + 0.27,
            text,
            ha="center",
            va="bottom",
            fontsize=TEXT_SIZE + 1,
            color="#C44E52",
            gid=f"gap:{name}",
        )


DrawLane = Callable[[Axes, View, Lane, set[str]], None]
# Per kind of lane: its name on the y axis, and what draws it.
LANE_KINDS: dict[str, tuple[Callable[[View, Lane], str], DrawLane]] = {
    "session": (_session_name, _draw_session),
    replay_stderr.KIND: (replay_stderr.lane_name, replay_stderr.draw),
}
