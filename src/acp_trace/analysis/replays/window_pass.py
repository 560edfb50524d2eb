"""The replay pass: one walk over a trace's rows that opens and closes resume/load windows,
counts what each covered session receives, and matches every marker (rules.md)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter
from typing import Any

import polars as pl

from acp_trace.analysis.columns import named_rows
from acp_trace.analysis.replays.model import Facts, MarkerFact, SessionStats, Window
from acp_trace.analysis.replays.rows import pass_rows
from acp_trace.analysis.vendor_events import VendorEvent, registry
from acp_trace.jsonrpc import BLOCKING_AGENT_REQUESTS, loads

RESUME_METHODS = ("session/resume", "session/load")
NEW_METHODS = ("session/new", "session/fork")


def collect(tl: pl.DataFrame, *, marker_meta: str | None = None) -> Facts:
    """Run the replay pass over every trace of a timeline.

    `marker_meta` (--marker-meta PATH[=VALUE]) names a vendor event that marks every v1 load
    (the load then expects it, as a v2 resume expects `replay_complete`); the known vendor
    events (`vendor_events.KNOWN`) mark a v1 load where they come (rules.md).
    """
    facts = Facts()
    msgs = tl["msg"]
    rows = named_rows(pass_rows(tl))
    events = registry(marker_meta)
    facts.named = events[0].label if marker_meta else None
    for _trace, trace_rows in groupby(rows, key=itemgetter("trace")):
        _Pass(facts, msgs, events).run(trace_rows)
    return facts


class _Pass:
    """The state of the replay pass over one trace."""

    def __init__(self, facts: Facts, msgs: pl.Series, events: tuple[VendorEvent, ...]) -> None:
        self.facts = facts
        self.events = {e.path: e for e in events}
        self.v1_markers = any(e.opt_in is None for e in events)  # --marker-meta given
        self.opted: set[str] = set()  # vendor events the client asked for in initialize
        self.sent: dict[str, int] = {}  # vendor event -> the row the agent first sent it
        self.msgs = msgs
        self.open: list[Window] = []
        self.closed: list[Window] = []
        self.active: dict[str, int] = {}  # session -> the row where it became active
        self.by_req: dict[int, Window] = {}
        # markers on a session no open resume covers yet: [row, session, windows open, done]
        self.deferred: list[list[Any]] = []
        # session -> the loads of it answered since its last client request: (window, the
        # history rows after each response); every one collects until that next request
        self.after_load: dict[str, list[tuple[int, list[int]]]] = {}
        self.ended = False
        self.trace = ""

    def run(self, rows: Iterator[dict[str, Any]]) -> None:
        for r in rows:
            self.trace = r["trace"]
            if self.ended:
                continue
            kind = r["kind"]
            if r["plain"]:
                self._history(r)
            elif kind == "event":
                self._event(r)
            elif kind == "request" and r["src"] == "client":
                self._client_request(r)
            elif kind in ("response", "error") and r["src"] == "agent":
                self._agent_response(r)
            elif r["method"] == "session/update" and r["src"] == "agent":
                self._update(r)
            elif kind == "request" and r["method"] in BLOCKING_AGENT_REQUESTS:
                self._agent_request(r)
        self._finish()

    # ------------------------------------------------------------ requests and responses

    def _client_request(self, r: dict[str, Any]) -> None:
        if r["method"] == "initialize":
            params = self._params(r["row"])
            opted = {p for p, e in self.events.items() if e.opt_in and e.opt_in(params)}
            self.opted |= opted
        session = r["session"]
        if session:
            self._close_after_load(session)
        if r["method"] not in RESUME_METHODS or not session:
            return
        params = self._params(r["row"])
        cursor = params.get("replayFrom")
        protocol = r["protocol"]
        v1_load = r["method"] == "session/load"
        v2_resume = not v1_load and protocol != 1
        replaying = v1_load or (v2_resume and cursor is not None)
        w = Window(
            index=len(self.facts.windows),
            trace=r["trace"],
            req_row=r["row"],
            request_id=r["id"],
            method=r["method"],
            session=session,
            protocol=protocol,
            replaying=replaying,
            expects_marker=(replaying and v2_resume) or (v1_load and self.v1_markers),
            v2=v2_resume and (protocol == 2 or cursor is not None),
            cursor=cursor,
            was_active=session in self.active,
        )
        w.sessions[session] = SessionStats(session, was_active=w.was_active)
        if v1_load and not w.expects_marker:
            promised = [(p, row) for p, row in self.sent.items() if p in self.opted]
            w.vendor_promise = promised[0] if promised else None
        if replaying:
            for other in self.open:
                # another pending replaying request that covers S (S or a child it announced)
                if other.replaying and session in other.sessions:
                    self.facts.concurrent.append((r["row"], other.index))
                    break
        self.facts.windows.append(w)
        self.by_req[r["row"]] = w
        self.open.append(w)

    def _agent_response(self, r: dict[str, Any]) -> None:
        peer = r["peer_row"]
        w = self.by_req.get(peer) if peer is not None else None
        if w is None:
            self._activate_new(r)
            return
        w.end_row = r["row"]
        w.end = "response" if r["kind"] == "response" else "error"
        w.error_code = r["error_code"]
        self.open.remove(w)
        self.closed.append(w)
        if w.succeeded:
            self.active.setdefault(w.session, r["row"])
            if w.method == "session/load":
                # a load sent before an earlier one's response: what comes after both responses
                # is after each of them (no request for S followed either), none dropped
                self.after_load.setdefault(w.session, []).append((w.index, []))

    def _activate_new(self, r: dict[str, Any]) -> None:
        if r["kind"] == "response" and r["session"] and r["request_method"] in NEW_METHODS:
            self.active.setdefault(r["session"], r["row"])

    def _event(self, r: dict[str, Any]) -> None:
        detail = loads(r["text"]) if r["text"] else {}
        if r["event"] == "exit" or (r["event"] == "eof" and detail.get("stream") == "agent"):
            for w in self.open:
                w.end, w.end_row = "connection", r["row"]
                self.closed.append(w)
            self.open = []
            self.ended = True

    # ------------------------------------------------------------ updates

    def _update(self, r: dict[str, Any]) -> None:
        session = r["session"]
        if not session:
            return
        cls = r["update_class"]
        if cls == "vendor":
            self._vendor(r, session)
        if cls == "history":
            for _window, rows in self.after_load.get(session, ()):
                rows.append(r["row"])
        if r["update_kind"] == "subagent_update" and r["update_session"]:
            self._announce(r, session, r["update_session"])
        if cls == "marker":
            self._marker(r, session)
        for w in self.open:
            stats = w.sessions.get(session)
            if stats is not None:
                _count(w, stats, r)

    def _vendor(self, r: dict[str, Any], session: str) -> None:
        """A vendor end-of-replay event: neither history nor live. Every open window that
        covers the session notes the first one (the gap's origin in v2); off v2 it is the
        marker of the v1 load that covers the session (rules.md)."""
        path = r["vendor_end"]
        self.sent.setdefault(path, r["row"])
        for w in self.open:
            stats = w.sessions.get(session)
            if stats is not None and stats.vendor_row is None:
                stats.vendor_row, stats.vendor_path = r["row"], path
        if r["protocol"] == 2:
            return
        if self.events[path].opt_in is None:  # named by --marker-meta: a marker in full
            self._marker(r, session)
            return
        for w in self.open:  # a known event marks only the load it ends: a promise kept
            stats = w.sessions.get(session)
            if w.method == "session/load" and stats is not None and stats.marker_row is None:
                stats.marker_row, stats.marker_vendor = r["row"], path
                self._fact(r["row"], session, "matched", w.index)
                return

    def _history(self, r: dict[str, Any]) -> None:
        """A run of plain history updates on one session (see `pass_rows`): what `_update`
        does for each of them, at once."""
        session = r["session"]
        for _window, rows in self.after_load.get(session, ()):
            rows.extend(r["rows"])
        for w in self.open:
            stats = w.sessions.get(session)
            if stats is not None:
                _count_history(w, stats, r)

    def _announce(self, r: dict[str, Any], parent: str, child: str) -> None:
        for w in self.open:
            if w.replaying and parent in w.sessions and child not in w.sessions:
                before_r = self.active.get(child, w.req_row) < w.req_row
                stats = SessionStats(
                    child, parent=parent, announce_row=r["row"], was_active=before_r
                )
                w.sessions[child] = stats
                self._marked_before(w, stats)

    def _marked_before(self, w: Window, stats: SessionStats) -> None:
        """A marker on the child that came earlier in this window, before its announcement:
        it is the child's marker (child-marker-before-announce; the child counts as marked)."""
        for entry in self.deferred:
            row, session, window_ids, done = entry
            if not done and session == stats.session and w.index in window_ids:
                entry[3] = True
                stats.marker_row = row
                stats.marker_before_announce = True
                stats.first_update_row = row
                self._fact(row, session, "before_announce", w.index)
                return

    def _marker(self, r: dict[str, Any], session: str) -> None:
        covering = [w for w in self.open if w.replaying and session in w.sessions]
        for w in covering:
            stats = w.sessions[session]
            if stats.marker_row is None:
                stats.marker_row = r["row"]
                stats.marker_vendor = r["vendor_end"]
                self._fact(r["row"], session, "matched", w.index)
                return
        if covering:
            self._fact(r["row"], session, "duplicate", covering[0].index)
            return
        earlier = [w for w in self.closed if w.replaying and session in w.sessions]
        if earlier:
            # After the response of a replaying resume that covered the session (rules.md).
            self._fact(r["row"], session, "late", earlier[-1].index)
            return
        self.deferred.append(
            [r["row"], session, [w.index for w in self.open if w.replaying], False]
        )

    def _agent_request(self, r: dict[str, Any]) -> None:
        session = r["session"]
        for w in self.open:
            stats = w.sessions.get(session) if session else None
            if w.replaying and stats is not None and stats.marker_row is None:
                stats.request_rows.append(r["row"])

    def _close_after_load(self, session: str) -> None:
        for entry in self.after_load.pop(session, ()):
            if entry[1]:
                self.facts.load_after.append(entry)

    # ------------------------------------------------------------ the end of the trace

    def _finish(self) -> None:
        for session in list(self.after_load):
            self._close_after_load(session)
        for row, session, _window_ids, done in self.deferred:
            if not done:
                self._fact(row, session, "unexpected", None)

    def _fact(self, row: int, session: str | None, status: str, window: int | None) -> None:
        self.facts.markers.append(MarkerFact(row, self.trace, session, status, window))

    def _params(self, row: int) -> dict[str, Any]:
        params = loads(self.msgs[row]).get("params")
        return params if isinstance(params, dict) else {}


def _count(w: Window, stats: SessionStats, r: dict[str, Any]) -> None:
    """Count one update on a covered session of an open window."""
    row, cls = r["row"], r["update_class"]
    if stats.first_update_row is None:
        stats.first_update_row = row
    if r["update_kind"] == "state_update" and stats.state_row is None:
        stats.state_row = row
    if cls == "history":
        stats.window_history += 1
        if stats.first_history_row is None:
            stats.first_history_row = row
    if stats.marker_row is not None and stats.marker_row <= row:
        return
    if cls == "history":
        stats.history_updates += 1
        stats.history_bytes += r["bytes"] or 0
        stats.last_history_row = row
        if w.v2 and w.replaying and r["has_message_id"] is False:
            stats.missing_id_rows.append(row)
    elif cls == "live":
        stats.live_updates += 1
        stats.live_rows.append(row)
        if r["update_kind"] == "prompt_suggestions_update" and w.replaying:
            stats.suggestion_rows.append(row)


def _count_history(w: Window, stats: SessionStats, run: dict[str, Any]) -> None:
    """Count a run of plain history updates on a covered session of an open window: `_count`
    for each. A marker is never inside a run, so it comes before all of the run or after."""
    first = run["row"]
    if stats.first_update_row is None:
        stats.first_update_row = first
    if stats.first_history_row is None:
        stats.first_history_row = first
    stats.window_history += run["count"]
    if stats.marker_row is not None and stats.marker_row <= first:
        return
    stats.history_updates += run["count"]
    stats.history_bytes += run["bytes_sum"]
    stats.last_history_row = run["last_row"]
    if w.v2 and w.replaying:
        stats.missing_id_rows.extend(run["no_id_rows"])
