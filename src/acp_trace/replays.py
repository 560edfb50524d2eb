"""Replays: one pass over a timeline that finds every resume/load window, matches markers, and
measures each replaying request per session (rules.md: outcomes and timings).

The pass records facts (windows, what each marker turned out to be, concurrent replays,
history after a v1 load response); `checks` turns facts into findings and `replays_table`
turns windows into the public replays table.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

import polars as pl

from acp_trace.jsonrpc import BLOCKING_AGENT_REQUESTS, INVALID_PARAMS, MESSAGE_KINDS, loads

RESUME_METHODS = ("session/resume", "session/load")
NEW_METHODS = ("session/new", "session/fork")


@dataclass
class SessionStats:
    """What one session did inside one window (the parent session or an announced child)."""

    session: str
    parent: str | None = None
    announce_row: int | None = None
    was_active: bool = False
    marker_row: int | None = None
    marker_before_announce: bool = False
    first_update_row: int | None = None
    last_history_row: int | None = None
    first_history_row: int | None = None
    state_row: int | None = None
    history_updates: int = 0
    history_bytes: int = 0
    live_updates: int = 0
    live_rows: list[int] = field(default_factory=list)
    request_rows: list[int] = field(default_factory=list)
    missing_id_rows: list[int] = field(default_factory=list)


@dataclass
class Window:
    """A session/resume or session/load request, from the request to its response or the end."""

    index: int
    trace: str
    req_row: int
    request_id: str | None
    method: str
    session: str
    protocol: int | None
    replaying: bool  # a replaying resume (v2 with cursor) or a v1 load
    expects_marker: bool  # v2 replaying resume, or v1 load with --marker-meta
    v2: bool
    cursor: Any
    was_active: bool
    end_row: int | None = None
    end: str = "open"  # response | error | connection | open
    error_code: int | None = None
    sessions: dict[str, SessionStats] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return self.end == "open"

    @property
    def succeeded(self) -> bool:
        return self.end == "response"


@dataclass(frozen=True)
class MarkerFact:
    """A marker row and what it is: matched, duplicate, late, unexpected or before_announce."""

    row: int
    trace: str
    session: str | None
    status: str
    window: int | None  # the window it matched (or that covered the session, for late)


@dataclass
class Facts:
    """Everything the replay pass found in a timeline."""

    windows: list[Window] = field(default_factory=list)
    markers: list[MarkerFact] = field(default_factory=list)
    concurrent: list[tuple[int, int]] = field(default_factory=list)  # (request row, window)
    load_after: list[tuple[int, list[int]]] = field(default_factory=list)  # (window, rows)


COLUMNS = (
    "row",
    "trace",
    "src",
    "kind",
    "method",
    "id",
    "session",
    "update_class",
    "update_kind",
    "update_session",
    "peer_row",
    "error_code",
    "bytes",
    "event",
    "text",
    "protocol",
    "has_message_id",
)


def collect(tl: pl.DataFrame, *, v1_markers: bool = False) -> Facts:
    """Run the replay pass over every trace of a timeline.

    `v1_markers`: v1 loads expect a marker too (a vendor `_meta` key names it: --marker-meta).
    """
    facts = Facts()
    msgs = tl["msg"]
    rows = _pass_rows(tl).iter_rows(named=True)
    for _trace, trace_rows in groupby(rows, key=itemgetter("trace")):
        _Pass(facts, msgs, v1_markers).run(trace_rows)
    return facts


PASS_KINDS = ("request", "response", "error", "notification", "event")


def _pass_rows(tl: pl.DataFrame) -> pl.DataFrame:
    """The rows the pass reads, trace by trace (in order of first appearance), with each run of
    consecutive plain history updates of one session folded into one row (`plain`): its first
    row, `last_row`, `count`, `bytes_sum`, the `no_id_rows` without messageId and all `rows`.
    A plain update changes no state but its session's counts, so a run counts at once."""
    runs = _runs(tl)
    heads = tl.select(COLUMNS[:-1])[runs["row"]]  # the first row of each run, all its columns
    folded = heads.hstack(runs.drop("row").get_columns())
    first_seen = pl.int_range(pl.len()).first().over("trace")
    return folded.sort(first_seen, maintain_order=True)


def _runs(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per run (see `_pass_rows`), computed from a few narrow columns of the rows the
    pass reads (the timeline itself, `msg` above all, is not copied)."""
    has_id = pl.col("msg").str.json_path_match("$.params.update.messageId").is_not_null()
    session, trace, row = pl.col("session"), pl.col("trace"), pl.col("row")
    plain = (
        (pl.col("kind") == "notification")
        & (pl.col("src") == "agent")
        & (pl.col("method") == "session/update")
        & (pl.col("update_class") == "history")
        & (pl.col("update_kind") != "subagent_update")
        & (session.fill_null("") != "")
    ).fill_null(False)
    narrow = (
        tl.lazy()
        .filter(pl.col("kind").is_in(PASS_KINDS))
        .select(
            row,
            trace,
            session,
            pl.col("bytes"),
            pl.when(pl.col("update_kind").is_in(sorted(MESSAGE_KINDS)))
            .then(has_id)
            .otherwise(None)
            .alias("has_message_id"),
            plain.alias("plain"),
        )
        .collect()
    )
    is_plain = pl.col("plain")
    starts = ~is_plain | ~is_plain.shift(1, fill_value=False)
    starts = starts | (session != session.shift(1)) | (trace != trace.shift(1))
    return (
        narrow.with_columns(starts.fill_null(True).cum_sum().alias("run"))
        .group_by("run", maintain_order=True)
        .agg(
            row.first(),
            pl.col("has_message_id").first(),
            is_plain.first(),
            row.last().alias("last_row"),
            pl.len().alias("count"),
            pl.col("bytes").sum().alias("bytes_sum"),
            row.filter(pl.col("has_message_id").not_()).alias("no_id_rows"),
            row.alias("rows"),
        )
        .drop("run")
    )


class _Pass:
    """The state of the replay pass over one trace."""

    def __init__(self, facts: Facts, msgs: pl.Series, v1_markers: bool) -> None:
        self.facts = facts
        self.v1_markers = v1_markers
        self.msgs = msgs
        self.open: list[Window] = []
        self.closed: list[Window] = []
        self.active: set[str] = set()
        self.by_req: dict[int, Window] = {}
        self.deferred: list[tuple[int, str, list[int]]] = []  # marker row, session, windows open
        self.after_load: dict[str, tuple[int, list[int]]] = {}
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
        if replaying:
            for other in self.open:
                if other.replaying and other.session == session:
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
            self.active.add(w.session)
            if w.method == "session/load":
                self.after_load[w.session] = (w.index, [])

    def _activate_new(self, r: dict[str, Any]) -> None:
        if r["kind"] == "response" and r["session"] and self._request_method(r) in NEW_METHODS:
            self.active.add(r["session"])

    def _request_method(self, r: dict[str, Any]) -> str | None:
        peer = r["peer_row"]
        if peer is None:
            return None
        return str(loads(self.msgs[peer]).get("method"))

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
        if cls == "history" and session in self.after_load:
            self.after_load[session][1].append(r["row"])
        if r["update_kind"] == "subagent_update" and r["update_session"]:
            self._announce(r, session, r["update_session"])
        if cls == "marker":
            self._marker(r, session)
        for w in self.open:
            stats = w.sessions.get(session)
            if stats is not None:
                _count(w, stats, r)

    def _history(self, r: dict[str, Any]) -> None:
        """A run of plain history updates on one session (see `_pass_rows`): what `_update`
        does for each of them, at once."""
        session = r["session"]
        if session in self.after_load:
            self.after_load[session][1].extend(r["rows"])
        for w in self.open:
            stats = w.sessions.get(session)
            if stats is not None:
                _count_history(w, stats, r)

    def _announce(self, r: dict[str, Any], parent: str, child: str) -> None:
        for w in self.open:
            if w.replaying and parent in w.sessions and child not in w.sessions:
                w.sessions[child] = SessionStats(
                    child, parent=parent, announce_row=r["row"], was_active=child in self.active
                )

    def _marker(self, r: dict[str, Any], session: str) -> None:
        covering = [w for w in self.open if w.replaying and session in w.sessions]
        for w in covering:
            stats = w.sessions[session]
            if stats.marker_row is None:
                stats.marker_row = r["row"]
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
        self.deferred.append((r["row"], session, [w.index for w in self.open if w.replaying]))

    def _agent_request(self, r: dict[str, Any]) -> None:
        session = r["session"]
        for w in self.open:
            stats = w.sessions.get(session) if session else None
            if w.replaying and stats is not None and stats.marker_row is None:
                stats.request_rows.append(r["row"])

    def _close_after_load(self, session: str) -> None:
        entry = self.after_load.pop(session, None)
        if entry is not None and entry[1]:
            self.facts.load_after.append(entry)

    # ------------------------------------------------------------ the end of the trace

    def _finish(self) -> None:
        for entry in self.after_load.values():
            if entry[1]:
                self.facts.load_after.append(entry)
        for row, session, window_ids in self.deferred:
            self._resolve_deferred(row, session, window_ids)

    def _resolve_deferred(self, row: int, session: str, window_ids: list[int]) -> None:
        for index in window_ids:
            stats = self.facts.windows[index].sessions.get(session)
            if stats is not None and stats.announce_row is not None and stats.announce_row > row:
                if stats.marker_row is None:
                    stats.marker_row = row
                    stats.marker_before_announce = True
                self._fact(row, session, "before_announce", index)
                return
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
    if cls == "history" and stats.first_history_row is None:
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


def _count_history(w: Window, stats: SessionStats, run: dict[str, Any]) -> None:
    """Count a run of plain history updates on a covered session of an open window: `_count`
    for each. A marker is never inside a run, so it comes before all of the run or after."""
    first = run["row"]
    if stats.first_update_row is None:
        stats.first_update_row = first
    if stats.first_history_row is None:
        stats.first_history_row = first
    if stats.marker_row is not None and stats.marker_row <= first:
        return
    stats.history_updates += run["count"]
    stats.history_bytes += run["bytes_sum"]
    stats.last_history_row = run["last_row"]
    if w.v2 and w.replaying:
        stats.missing_id_rows.extend(run["no_id_rows"])


# ---------------------------------------------------------------- the public replays table

REPLAY_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "session": pl.String,
    "parent_session": pl.String,
    "request_id": pl.String,
    "method": pl.String,
    "protocol": pl.Int64,
    "agent": pl.String,
    "agent_version": pl.String,
    "outcome": pl.String,
    "first_update_ms": pl.Float64,
    "marker_ms": pl.Float64,
    "last_history_ms": pl.Float64,
    "state_ms": pl.Float64,
    "response_ms": pl.Float64,
    "marker_to_response_ms": pl.Float64,
    "last_history_to_response_ms": pl.Float64,
    "history_updates": pl.Int64,
    "history_bytes": pl.Int64,
    "live_updates": pl.Int64,
}


def outcome(w: Window, stats: SessionStats) -> str:
    """The outcome of a replaying request for one session (rules.md)."""
    marked = stats.marker_row is not None
    if w.end == "open":
        return "open"
    if w.method == "session/load":
        return "v1_loaded" if w.succeeded else "v1_failed"
    if w.succeeded:
        return "complete" if marked else "unmarked"
    if marked:
        return "complete_failed"
    if w.end == "error" and w.error_code == INVALID_PARAMS:
        return "rejected"
    return "truncated"


def replays_table(tl: pl.DataFrame, facts: Facts) -> pl.DataFrame:
    """One row per replaying request and session, children included (rules.md fields)."""
    t_ms = tl["t_ms"]
    agents = tl.select("trace", "agent", "agent_version").unique("trace")
    info = {t: (a, v) for t, a, v in agents.iter_rows()}
    rows = []
    for w in facts.windows:
        if not w.replaying:
            continue
        for stats in w.sessions.values():
            rows.append(_replay_row(w, stats, t_ms, info.get(w.trace, (None, None))))
    return pl.DataFrame(rows, schema=REPLAY_SCHEMA, orient="row")


def _replay_row(
    w: Window,
    stats: SessionStats,
    t_ms: pl.Series,
    agent: tuple[str | None, str | None],
) -> tuple[Any, ...]:
    def at(row: int | None) -> float | None:
        if row is None:
            return None
        start, value = t_ms[w.req_row], t_ms[row]
        return None if start is None or value is None else value - start

    response = w.end_row if w.end in ("response", "error") else None
    marker = stats.marker_row
    response_ms, marker_ms, last_ms = at(response), at(marker), at(stats.last_history_row)
    return (
        w.trace,
        stats.session,
        stats.parent,
        w.request_id,
        w.method,
        w.protocol,
        agent[0],
        agent[1],
        outcome(w, stats),
        at(stats.first_update_row),
        marker_ms,
        last_ms,
        at(stats.state_row),
        response_ms,
        _diff(response_ms, marker_ms),
        _diff(response_ms, last_ms),
        stats.history_updates,
        stats.history_bytes,
        stats.live_updates,
    )


def _diff(later: float | None, earlier: float | None) -> float | None:
    return None if later is None or earlier is None else later - earlier
