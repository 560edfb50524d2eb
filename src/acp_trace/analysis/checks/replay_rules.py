"""Rules about replays: the v2 replay_complete marker, v2 resumes and v1 loads (rules.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.analysis.replays import SessionStats, Window
from acp_trace.jsonrpc import INVALID_PARAMS
from acp_trace.quantities import count


def _sessions(ctx: Context, expecting: bool = True) -> Iterator[tuple[Window, SessionStats]]:
    """Each (window, session) of the replaying requests (only those expecting a marker)."""
    for w in ctx.facts.windows:
        if w.replaying and (w.expects_marker or not expecting):
            for stats in w.sessions.values():
                yield w, stats


def _mark(ctx: Context, row: int | None) -> str:
    """What marked a replay at `row`: `replay_complete`, or the vendor event (rules.md)."""
    vendor = ctx.timeline["vendor_end"][row] if row is not None else None
    return "replay_complete" if vendor is None else f"the vendor end-of-replay event {vendor}"


def _response(ctx: Context, w: Window) -> str:
    if w.end == "response":
        return f"a success response at {ctx.seq(w.end_row)}"
    if w.end == "error":
        return f"an error {w.error_code} at {ctx.seq(w.end_row)}"
    return "the end of the connection" if w.end == "connection" else "no response"


@rule("marker-missing", "error", "a replaying v2 resume succeeded without a replay_complete marker")
def marker_missing(ctx: Context) -> Iterator[Finding]:
    late = {(m.window, m.session): m.row for m in ctx.facts.markers if m.status == "late"}
    for w, stats in _sessions(ctx):
        if stats.parent is None and w.succeeded and stats.marker_row is None:
            assert w.end_row is not None
            after = late.get((w.index, stats.session))
            tail = (
                f"; a marker came only after it, at {ctx.seq(after)}" if after is not None else ""
            )
            if stats.vendor_row is not None and w.v2:
                tail += (
                    f"; the vendor end-of-replay event {stats.vendor_path} came at "
                    f"{ctx.seq(stats.vendor_row)} (not a marker in v2: the gap is measured "
                    "from it)"
                )
            expected = "replay_complete" if w.v2 else f"--marker-meta event {ctx.facts.named}"
            yield ctx.at(
                "marker-missing",
                w.end_row,
                stats.session,
                f"{ctx.describe(w)} got {_response(ctx, w)} with no {expected} on "
                f"{stats.session} before it; expected the marker after the last replayed "
                f"update ({count(stats.history_updates)} history updates) and before the response{tail}",
            )
    yield from _promise_broken(ctx)


def _promise_broken(ctx: Context) -> Iterator[Finding]:
    """A successful v1 load without the vendor event its client opted in to and the agent
    had sent earlier on the connection: a warning that names the event (rules.md)."""
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        if w.vendor_promise is None or not w.succeeded or stats.marker_row is not None:
            continue
        assert w.end_row is not None
        path, first = w.vendor_promise
        yield ctx.at(
            "marker-missing",
            w.end_row,
            w.session,
            f"{ctx.describe(w)} got {_response(ctx, w)} with no vendor end-of-replay event "
            f"{path} on {w.session} before it, though the client opted in to it in initialize "
            f"and the agent sent it at {ctx.seq(first)} on this connection; expected it after "
            f"the last replayed update ({count(stats.history_updates)} history updates) and before "
            "the response",
            "warning",
        )


def _marker_findings(
    ctx: Context, status: str, rule_id: str, text: Callable[[Any], str]
) -> Iterator[Finding]:
    for m in ctx.facts.markers:
        if m.status == status:
            row = m.row
            yield ctx.at(rule_id, row, m.session, text(m))


@rule("marker-duplicate", "error", "a second marker for a resume that already had its marker")
def marker_duplicate(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        first = w.sessions[m.session].marker_row
        return (
            f"{_mark(ctx, m.row)} on {m.session} at {ctx.seq(m.row)} is a second marker: "
            f"{ctx.describe(w)} already got its marker at {ctx.seq(first)}; expected exactly one"
        )

    yield from _marker_findings(ctx, "duplicate", "marker-duplicate", text)


@rule("marker-late", "error", "a marker arrived after the response of the resume it belongs to")
def marker_late(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        return (
            f"{_mark(ctx, m.row)} on {m.session} at {ctx.seq(m.row)} came after "
            f"{_response(ctx, w)} "
            f"to {ctx.describe(w)}; expected it before the response"
        )

    yield from _marker_findings(ctx, "late", "marker-late", text)


@rule("marker-unexpected", "error", "a marker on a session that no open replaying resume covers")
def marker_unexpected(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        return (
            f"{_mark(ctx, m.row)} on {m.session} at {ctx.seq(m.row)} while no replaying "
            f"session/resume (with replayFrom) covering {m.session} was open; markers are "
            "expected only at the end of a replay"
        )

    yield from _marker_findings(ctx, "unexpected", "marker-unexpected", text)


@rule("marker-with-rejection", "error", "a marker in the window of a resume answered -32602")
def marker_with_rejection(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if w.end == "error" and w.error_code == INVALID_PARAMS and stats.marker_row is not None:
            yield ctx.at(
                "marker-with-rejection",
                stats.marker_row,
                stats.session,
                f"replay_complete on {stats.session} at {ctx.seq(stats.marker_row)}, but "
                f"{ctx.describe(w)} was then rejected with -32602 at {ctx.seq(w.end_row)}; "
                "a rejected cursor replays nothing and sends no marker",
            )


@rule("live-before-marker", "error", "a live-only update before the session's marker")
def live_before_marker(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if stats.marker_row is None:
            continue
        severity = "warning" if stats.was_active else "error"
        for row in stats.live_rows:
            if row < stats.marker_row:
                kind = ctx.timeline["update_kind"][row]
                yield ctx.at(
                    "live-before-marker",
                    row,
                    stats.session,
                    f"{kind} on {stats.session} at {ctx.seq(row)} came before its "
                    f"{_mark(ctx, stats.marker_row)} at {ctx.seq(stats.marker_row)} in "
                    f"{ctx.describe(w)}; "
                    "live updates must wait until after the marker"
                    + (
                        " (the session was already active, so: warning)"
                        if severity == "warning"
                        else ""
                    ),
                    severity,
                )


@rule("request-before-marker", "warning", "a permission or elicitation request before the marker")
def request_before_marker(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if stats.marker_row is None:
            continue
        for row in stats.request_rows:
            if row < stats.marker_row:
                method = ctx.timeline["method"][row]
                yield ctx.at(
                    "request-before-marker",
                    row,
                    stats.session,
                    f"{method} for {stats.session} at {ctx.seq(row)} came before its "
                    f"{_mark(ctx, stats.marker_row)} at {ctx.seq(stats.marker_row)} in "
                    f"{ctx.describe(w)}; "
                    "agent requests should wait until the replay is complete",
                )


@rule("child-marker-missing", "error", "an announced child has no marker before a success response")
def child_marker_missing(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx):
        if stats.parent is not None and w.succeeded and stats.marker_row is None:
            assert w.end_row is not None
            yield ctx.at(
                "child-marker-missing",
                w.end_row,
                stats.session,
                f"child {stats.session}, announced at {ctx.seq(stats.announce_row)} in "
                f"{ctx.describe(w)}, got no replay_complete before {_response(ctx, w)}; "
                "expected one on the child's own sessionId",
            )


@rule("child-marker-before-announce", "error", "a child's marker came before its subagent_update")
def child_marker_before_announce(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        announce = w.sessions[m.session].announce_row
        return (
            f"replay_complete on child {m.session} at {ctx.seq(m.row)} came before the "
            f"subagent_update announcing it at {ctx.seq(announce)} in {ctx.describe(w)}; "
            "expected the child's marker after its announcement"
        )

    yield from _marker_findings(ctx, "before_announce", "child-marker-before-announce", text)


@rule(
    "concurrent-replay",
    "warning",
    "a second replaying resume of a session while one that covers it is pending",
    side="client",
)
def concurrent_replay(ctx: Context) -> Iterator[Finding]:
    for row, index in ctx.facts.concurrent:
        w = ctx.facts.windows[index]
        method = ctx.timeline["method"][row]
        session = ctx.timeline["session"][row]
        covers = "" if session == w.session else f" (which covers {session}, its child)"
        yield ctx.at(
            "concurrent-replay",
            row,
            session,
            f"{method} of {session} at {ctx.seq(row)} was sent while {ctx.describe(w)}{covers} "
            "was still pending; markers carry no request id, so both replays are ambiguous",
        )


@rule(
    "updates-with-rejection",
    "error",
    "a v2 resume with a cursor answered -32602 got history updates in its window",
)
def updates_with_rejection(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        rejected = w.end == "error" and w.error_code == INVALID_PARAMS
        if w.method != "session/resume" or not (w.v2 and w.replaying and rejected):
            continue
        if stats.first_history_row is not None:
            yield ctx.at(
                "updates-with-rejection",
                stats.first_history_row,
                w.session,
                f"{ctx.describe(w)} was rejected with -32602 at {ctx.seq(w.end_row)}, yet "
                f"{count(stats.window_history)} history updates on {w.session} came in its window, the "
                f"first ({ctx.timeline['update_kind'][stats.first_history_row]}) at "
                f"{ctx.seq(stats.first_history_row)}; an agent that rejects the cursor replays "
                "nothing",
            )


@rule("state-snapshot-missing", "error", "a successful v2 session/resume sent no state_update")
def state_snapshot_missing(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        if w.method == "session/resume" and w.v2 and w.succeeded and stats.state_row is None:
            assert w.end_row is not None
            yield ctx.at(
                "state-snapshot-missing",
                w.end_row,
                w.session,
                f"{ctx.describe(w)} got {_response(ctx, w)} with no state_update on "
                f"{w.session} before it; every successful v2 resume sends a state snapshot",
            )


@rule("replay-without-cursor", "warning", "a resume without cursor replayed history")
def replay_without_cursor(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        if w.method != "session/resume" or w.replaying or w.was_active:
            continue
        if stats.first_history_row is not None:
            what = "a v2 session/resume without replayFrom" if w.v2 else "a v1 session/resume"
            yield ctx.at(
                "replay-without-cursor",
                stats.first_history_row,
                w.session,
                f"{ctx.describe(w)} is {what} on a session not active on the connection, "
                f"yet history ({ctx.timeline['update_kind'][stats.first_history_row]}) came "
                f"at {ctx.seq(stats.first_history_row)}; it must not replay",
            )


@rule("message-id-missing", "error", "a replayed v2 message has no messageId")
def message_id_missing(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        rows = [
            r for r in stats.missing_id_rows if stats.marker_row is None or r < stats.marker_row
        ]
        if w.v2 and rows:
            kind = ctx.timeline["update_kind"][rows[0]]
            more = f" (and {count(len(rows) - 1)} more in this replay)" if len(rows) > 1 else ""
            yield ctx.at(
                "message-id-missing",
                rows[0],
                stats.session,
                f"replayed {kind} on {stats.session} at {ctx.seq(rows[0])} in "
                f"{ctx.describe(w)} has no messageId{more}; v2 replayed messages must carry one",
            )


@rule("load-updates-after-response", "error", "history arrived after a v1 load's response")
def load_updates_after_response(ctx: Context) -> Iterator[Finding]:
    for index, rows in ctx.facts.load_after:
        w = ctx.facts.windows[index]
        yield ctx.at(
            "load-updates-after-response",
            rows[0],
            w.session,
            f"{count(len(rows))} history updates on {w.session} came after the success response "
            f"to {ctx.describe(w)} at {ctx.seq(w.end_row)}, the first at {ctx.seq(rows[0])}; "
            "session/load must replay the whole history before it responds",
        )
