"""`explain_replay`: why one replay ended as it did and where its time went.

One replaying request (chosen like `acp-trace plot --kind replay`: by trace, session and
request id; the slowest of those that match) as the answer to "why was this slow, and is
the history complete": its outcome and what makes it that outcome, the window condensed
(the steps of each session in time order, its updates counted per class), the gap and the
phases the agent's stderr names inside it, what a client would have suffered (its largest
line and silence against the clients' limits and deadlines, the quiet-window guess:
weight.py), and the findings about it with their sides.
Everything comes from the replay pass and the tables the CLI shows.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.analysis.replays import Window
from acp_trace.analysis.replays.model import SessionStats
from acp_trace.errors import UsageError
from acp_trace.jsonrpc import INVALID_PARAMS, id_json, json_text
from acp_trace.mcpserver.fidelity import fidelity_said
from acp_trace.mcpserver.paging import Page, bounded
from acp_trace.mcpserver.store import Loaded
from acp_trace.mcpserver.weight import weight_said
from acp_trace.quantities import count, duration
from acp_trace.render.plots.replay_window import Pick, no_match, window_events, window_stderr
from acp_trace.render.report.formats import rows_json

LAST_LINES = 5  # stderr lines of the gap quoted
LINE_CHARS = 200

OUTCOMES = {
    "complete": "the agent sent replay_complete for the session before its success response: "
    "the client knew the history was complete at the marker",
    "unmarked": "a success response with no replay_complete before it (a v2 replaying resume "
    "must send one): the client cannot tell whether the history is complete until the "
    "response, and the gap is measured from the last replayed history update",
    "complete_failed": "the marker came, then an error response: the history is complete, "
    "the resume failed",
    "truncated": "the request ended (an error, or the connection) before any marker: the "
    "history may be incomplete",
    "rejected": f"an error {INVALID_PARAMS} (invalid params) with no marker: the agent "
    "refused the resume",
    "open": "the trace ends with the request pending and no record of the connection "
    "ending: no response was recorded",
    "v1_loaded": "a v1 session/load answered with success (v1 has no replay_complete marker: "
    "the history ends at the response, or at the agent's vendor end-of-replay event when it "
    "sent one)",
    "v1_failed": "a v1 session/load answered with an error, or the connection ended first",
}


def explain(
    loaded: Loaded,
    page: Page,
    *,
    trace: str | None,
    session: str | None,
    request: str | None,
) -> str:
    """The explanation of one replay; its findings are the rows, paged."""
    a = loaded.analysis
    full = None
    if trace is not None:
        full = loaded.full_name(trace)
        if full is None:
            raise UsageError(f"trace {trace}: no such trace; {loaded.choices()}")
    w, matching = choose(a.facts.windows, a.timeline["t_ms"], Pick(session, request, full))
    tl = a.timeline
    rows = a.replays.filter(
        pl.col("trace") == w.trace,
        pl.col("request_id").eq_missing(w.request_id),
        pl.col("session").is_in(list(w.sessions)),
    )
    replay = short_row(loaded, rows.filter(pl.col("session") == w.session))
    head: dict[str, Any] = {
        "replay": replay,
        "outcome": replay.get("outcome"),
        "why": OUTCOMES.get(str(replay.get("outcome")), ""),
        "time": time_sentence(replay, w.sessions.get(w.session)),
        "slowest_part": None,
        "request": {
            "method": w.method,
            "id": None if w.request_id is None else id_json(w.request_id),
            "seq": tl["seq"][w.req_row],
            "replayFrom": None if w.cursor is None else json_text(w.cursor)[:LINE_CHARS],
        },
        "end": ending(w, tl),
        "sessions": sessions(w, tl, rows),
        "gap_stderr": gap_stderr(a, w, replay),
        "is_the_replay_the_session": fidelity_said(a, w),
        "what_a_client_would_suffer": weight_said(a, w),
        "replays_matching": matching,
    }
    head["slowest_part"] = slowest_part(replay, head["gap_stderr"]["largest_phase_in_gap"])
    if matching > 1:
        head["chosen"] = "the slowest of the replays that match; name trace, session and "
        head["chosen"] += "request to choose another"
    findings = window_findings(a.findings(), w, a.facts.windows, tl)
    head["findings_note"] = "rows: the findings about this replay (side: who broke the rule)"
    return bounded(short_rows(loaded, rows_json(findings)), page, loaded.version, head)


def choose(windows: list[Window], t_ms: pl.Series, pick: Pick) -> tuple[Window, int]:
    """The replaying window `pick` matches that took longest (untimed ones last);
    UsageError naming the selector that matches none and the values it could take."""
    replaying = [w for w in windows if w.replaying]
    chosen = [w for w in replaying if pick.matches(w)]
    if not chosen:
        if not replaying:
            raise UsageError("no replaying session/resume or session/load in these traces")
        raise UsageError(no_match(pick, replaying, replaying).removeprefix("--"))

    def took(w: Window) -> float:
        start = t_ms[w.req_row]
        end = t_ms[w.end_row] if w.end_row is not None else None
        return -1.0 if start is None or end is None else float(end - start)

    return max(chosen, key=took), len(chosen)


def short_row(loaded: Loaded, rows: pl.DataFrame) -> dict[str, Any]:
    found = short_rows(loaded, rows_json(rows))
    return found[0] if found else {}


def short_rows(loaded: Loaded, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        row["trace"] = loaded.names.get(row["trace"], row["trace"])
    return rows


def end_of_replay(stats: SessionStats | None) -> str:
    """What ended a session's replay, named as a person reads it: a `replay_complete` update
    is the marker; a vendor end-of-replay event is `vendor event PATH` (the PATH of its
    `gap_source`, `vendor:PATH`), whatever role the rules give it."""
    if stats is not None and stats.marker_vendor is not None:
        return f"vendor event {stats.marker_vendor}"
    return "replay_complete marker"


def time_sentence(r: dict[str, Any], stats: SessionStats | None = None) -> str:
    """Where the time to the response went: waiting for the first update, replaying, the gap
    (from what ended the replay, named by `end_of_replay`)."""
    response = r.get("response_ms")
    if response is None:
        return "no response was recorded, so no time to it (see end)"
    parts = [f"the response came {duration(response)} after the request"]
    if r.get("first_update_ms") is not None:
        parts.append(f"the first update at {duration(r['first_update_ms'])}")
    if r.get("last_history_ms") is not None:
        parts.append(
            f"the last of {count(r['history_updates'])} history updates at {duration(r['last_history_ms'])}"
        )
    if r.get("marker_to_response_ms") is not None:
        parts.append(
            f"the {end_of_replay(stats)} at {duration(r['marker_ms'])}, then a gap of "
            f"{duration(r['marker_to_response_ms'])} to the response"
        )
    elif r.get("vendor_marker_ms") is not None and stats is not None and stats.vendor_path:
        parts.append(
            f"no replay_complete marker; the vendor event {stats.vendor_path} at "
            f"{duration(r['vendor_marker_ms'])}, then a gap of "
            f"{duration(response - r['vendor_marker_ms'])} to the response"
        )
    elif r.get("last_history_to_response_ms") is not None:
        parts.append(
            f"no marker: a gap of {duration(r['last_history_to_response_ms'])} from the last "
            "history update to the response"
        )
    return "; ".join(parts)


def slowest_part(r: dict[str, Any], phase: str | None) -> str | None:
    """Which part of the time to the response was the longest: the wait for the first
    update, the replay itself (first to last history update), or the gap after it."""
    response = r.get("response_ms")
    if response is None or response <= 0:
        return None
    first, last = r.get("first_update_ms"), r.get("last_history_ms")
    gap = r.get("marker_to_response_ms")
    gap = r.get("last_history_to_response_ms") if gap is None else gap
    parts = {
        "waiting for the first update": first,
        "replaying the history": None if first is None or last is None else last - first,
        "the gap after the replay": gap,
    }
    known = {k: v for k, v in parts.items() if v is not None}
    if not known:
        return None
    name, took = max(known.items(), key=lambda kv: kv[1])
    text = f"{name}: {duration(took)} of {duration(response)} ({took / response:.0%})"
    if name == "the gap after the replay" and phase:
        text += f"; inside the gap the agent's stderr names {phase}"
    return text


def ending(w: Window, tl: pl.DataFrame) -> dict[str, Any]:
    seq = tl["seq"][w.end_row] if w.end_row is not None else None
    at = None
    if w.end_row is not None and tl["t_ms"][w.req_row] is not None:
        t = tl["t_ms"][w.end_row]
        at = None if t is None else round(t - tl["t_ms"][w.req_row], 6)
    return {"how": w.end, "error_code": w.error_code, "seq": seq, "ms": at}


def sessions(w: Window, tl: pl.DataFrame, rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Per session of the window (the resumed one, then its children): the updates counted
    per class and its steps in time order (ms after the request)."""
    counts: dict[str, dict[str, int]] = {}
    events = window_events(tl, w).group_by("session", "cls").len()
    for session, cls, n in events.sort("cls").iter_rows():
        counts.setdefault(session, {})[str(cls)] = n
    out = []
    for r in rows_json(rows):
        stats = w.sessions.get(r["session"])
        vendor = None if stats is None else stats.vendor_path
        vendor_ms = r["vendor_marker_ms"] if r["marker_ms"] != r["vendor_marker_ms"] else None
        steps = [
            (r["first_update_ms"], "first update"),
            (r["last_history_ms"], f"last history update ({count(r['history_updates'])} in all, "
                                   f"{count(r['history_bytes'])} bytes)"),
            (r["marker_ms"], end_of_replay(stats)),
            (vendor_ms, f"vendor event {vendor}"),
            (r["state_ms"], "state_update (the session's state)"),
            (r["response_ms"], f"end of the request: {w.end}"),
        ]  # fmt: skip
        timed = sorted((t, i, what) for i, (t, what) in enumerate(steps) if t is not None)
        out.append(
            {
                "session": r["session"],
                "parent_session": r["parent_session"],
                "outcome": r["outcome"],
                "updates_in_window_by_class": counts.get(r["session"], {}),
                "steps": [{"ms": t, "what": what} for t, _i, what in timed],
            }
        )
    return out


def gap_stderr(a: Any, w: Window, replay: dict[str, Any]) -> dict[str, Any]:
    """The agent's stderr in the window: how many lines, those inside the gap, the phases
    they name (with the time of each inside the gap) and the last lines of the gap."""
    lines = window_stderr(a.timeline, w)
    phases = a.gap_phases.filter(
        pl.col("trace") == w.trace,
        pl.col("session") == w.session,
        pl.col("request_id").eq_missing(w.request_id),
    )
    named = rows_json(phases.drop("trace", "session", "request_id", "line"))
    named.sort(key=lambda p: -(p["in_gap_ms"] or 0.0))
    gap = replay.get("marker_to_response_ms") or replay.get("last_history_to_response_ms")
    leaves = [p for p in named if p["leaf"] and p["in_gap_ms"]]
    largest = None
    if leaves and gap:
        top = leaves[0]
        largest = f"{top['phase']}: {duration(top['in_gap_ms'])} of the {duration(gap)} gap"
    texts = lines["text"].to_list() if lines.height else []
    return {
        "lines_in_window": lines.height,
        "lines_in_gap": replay.get("stderr_lines_in_gap"),
        "largest_phase_in_gap": largest,
        "phases_in_gap": named[:20],
        "last_lines": [t[:LINE_CHARS] for t in texts[-LAST_LINES:]],
    }


def window_findings(
    found: pl.DataFrame, w: Window, windows: list[Window], tl: pl.DataFrame
) -> pl.DataFrame:
    """The findings on the window's sessions from its request on, up to the next replaying
    request of the session in the trace (a marker that came late is found after the end)."""
    mine = found.filter(
        pl.col("trace") == w.trace,
        pl.col("session").is_in(list(w.sessions)) | pl.col("session").is_null(),
    )
    start = tl["seq"][w.req_row]
    later = [
        o.req_row
        for o in windows
        if o.trace == w.trace and o.session == w.session and o.req_row > w.req_row
    ]
    end = tl["seq"][min(later)] if later else None
    if start is not None:
        mine = mine.filter(pl.col("seq") >= start)
    if end is not None:
        mine = mine.filter(pl.col("seq") < end)
    return mine
