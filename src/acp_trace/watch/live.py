"""The live picture of traces being written: connections, sessions, their timelines and the
replays in progress, updated one record at a time (O(1) each, memory bounded).

This is what the screen shows between two analyses: counts, times and the marker as they
arrive. What a replay's outcome is and which rules it breaks is never decided here: the
analyzer decides it (`watch.judge`), over the same records, with the rules of `check`.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acp_trace.analysis.phase_patterns import parse_phase
from acp_trace.analysis.vendor_events import VendorEvent, first_match, registry
from acp_trace.jsonrpc import (
    HISTORY_KINDS,
    MARKER_KIND,
    agent_name,
    as_dict,
    as_str,
    id_key,
    loads,
)
from acp_trace.trace.format import element_spans, msg_text

ROWS_KEPT = 400  # rows of a timeline kept; older ones are folded into counts
RAW_KEPT = 256 << 10  # the bytes of a message a row keeps to be opened
REPLAYING = ("session/resume", "session/load")
OPENING = frozenset({"initialize", "session/new", "session/fork", *REPLAYING})


@dataclass
class Row:
    """One row of a timeline: a message, a group of updates of one kind, an stderr line."""

    t_ns: int | None
    seq: int | None
    kind: str  # request, response, error, notification, updates, marker, state, stderr, tap
    label: str  # method, update kind, stderr text, tap event (escaped when shown)
    session: str | None
    count: int = 1
    latency_ms: float | None = None
    raw: bytes | None = None  # the first message of the row, for the message view
    phase: str | None = None


@dataclass
class Replay:
    """A replaying request (session/resume with a cursor, session/load) and its session."""

    trace: str
    session: str
    request_id: str
    method: str
    t_req: int
    updates: int = 0
    bytes: int = 0  # as `history_bytes` counts them: the messages' bytes in their records
    t_marker: int | None = None  # its replay_complete
    t_vendor: int | None = None  # its first vendor end-of-replay event
    vendor: str | None = None  # that event's path
    t_last_history: int | None = None
    t_response: int | None = None
    failed: bool = False
    outcome: str | None = None  # decided by the analyzer
    gap_ms: float | None = None
    phase: str | None = None  # the largest phase in the gap
    findings: list[str] = field(default_factory=list)
    gap_source: str | None = None  # decided by the analyzer

    @property
    def counting(self) -> bool:
        """History updates still count: before the marker (in a v1 load, the vendor event
        is the marker: rules.md, "Vendor end-of-replay events")."""
        if self.t_marker is not None:
            return False
        return self.method != "session/load" or self.t_vendor is None

    def gap_start(self) -> tuple[int | None, str | None]:
        """Where the gap runs from so far, and its `gap_source`, as the analyzer names it:
        the marker, else the vendor event, else the last history update."""
        if self.t_marker is not None:
            return self.t_marker, "marker"
        if self.t_vendor is not None:
            return self.t_vendor, f"vendor:{self.vendor}"
        if self.t_last_history is not None:
            return self.t_last_history, "last_history"
        return None, None


@dataclass
class Session:
    id: str
    trace: str
    state: str = "new"  # new, replaying, active, failed
    counts: Counter[str] = field(default_factory=Counter)
    rows: deque[Row] = field(default_factory=lambda: deque(maxlen=ROWS_KEPT))
    folded: Counter[str] = field(default_factory=Counter)  # rows that left the deque, by kind

    def add(self, row: Row) -> None:
        if len(self.rows) == self.rows.maxlen:
            old = self.rows[0]
            self.folded[old.kind] += old.count
        self.rows.append(row)


@dataclass
class Trace:
    """One connection: a trace file from its header on."""

    name: str
    header: dict[str, Any] = field(default_factory=dict)
    started: float | None = None  # the wall clock of t_ns 0 (epoch seconds)
    agent: str = "?"  # as `replays` and `summary` name it (jsonrpc.agent_name)
    command: object = None  # the header's
    initialized: bool = False  # its first initialize was answered (the agent is named)
    announced: bool = False  # its trace_started event is out
    version: str | None = None
    protocol: int | None = None
    records: int = 0
    malformed: int = 0
    last_t: int | None = None
    ended: dict[str, Any] | None = None  # the exit event
    errors: list[str] = field(default_factory=list)
    dropped: int = 0
    pending: dict[tuple[str, str], tuple[str, int | None, str | None]] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    stderr: Session = field(default_factory=lambda: Session("(stderr)", ""))

    def wall(self, t_ns: int | None) -> float | None:
        """The wall clock time of a tap stamp."""
        return None if self.started is None or t_ns is None else self.started + t_ns / 1e9


@dataclass
class Change:
    """What one record changed that a script cares about (`watch.engine` turns it into an
    event): the trace started, its agent was named (`agent_named`), a replay started, its
    vendor end-of-replay event (`vendor_event`) or its marker came, its response came, the
    trace ended."""

    what: str
    trace: Trace
    replay: Replay | None = None


class Live:
    """Every trace followed, fed line by line."""

    def __init__(self, marker_meta: str | None = None) -> None:
        self.recognise(marker_meta)
        self.traces: dict[str, Trace] = {}
        self.replays: dict[tuple[str, str, str], Replay] = {}  # (trace, request id, session)
        self.open: dict[tuple[str, str], Replay] = {}  # (trace, session): the newest open one

    def recognise(self, marker_meta: str | None) -> None:
        """The vendor end-of-replay events to recognise: the known ones, and the one
        `--marker-meta` names (analysis.vendor_events.registry, as the analyzer)."""
        self.vendor: tuple[VendorEvent, ...] = registry(marker_meta)
        self.needles = tuple({e.needle.encode() for e in self.vendor})

    def reset(self, name: str) -> None:
        """A trace read again from its start (truncated or replaced)."""
        self.traces.pop(name, None)
        for key in [k for k in self.replays if k[0] == name]:
            del self.replays[key]
        for pair in [k for k in self.open if k[0] == name]:
            del self.open[pair]

    def feed(self, name: str, line: bytes) -> list[Change]:
        trace = self.traces.get(name)
        if trace is None:
            trace = self.traces[name] = Trace(name)
        try:
            rec = loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict):
            trace.malformed += 1
            return []
        if rec.get("kind") == "header" and trace.records == 0:
            return self._header(trace, rec)
        trace.records += 1
        t_ns = rec.get("t_ns") if type(rec.get("t_ns")) is int else None
        trace.last_t = t_ns if t_ns is not None else trace.last_t
        seq = rec.get("seq") if type(rec.get("seq")) is int else None
        src = rec.get("src")
        if src == "tap":
            raw = line if len(line) <= RAW_KEPT else None  # Enter shows it (the account's counts)
            return self._tap(trace, rec, Row(t_ns, seq, "tap", "?", None, raw=raw))
        if src == "stderr":
            text = as_str(rec.get("text")) or "(binary line)"
            phase = parse_phase(text)
            trace.stderr.add(
                Row(t_ns, seq, "stderr", text, None, phase=phase.name if phase else None)
            )
            return []
        msg = rec.get("msg")
        if src not in ("client", "agent"):
            return []
        if isinstance(msg, dict):
            return self._message(trace, msg, src, t_ns, seq, line, msg_text(line, rec)[1])
        if isinstance(msg, list):  # a batch: each element in order, sized as the reader does
            spans = element_spans(msg_text(line, rec)[0].encode())
            sizes = [len(x) for x in spans] if len(spans) == len(msg) else [0] * len(msg)
            return [
                c
                for m, size in zip(msg, sizes, strict=True)
                if isinstance(m, dict)
                for c in self._message(trace, m, src, t_ns, seq, line, size)
            ]
        return []

    def _header(self, trace: Trace, rec: dict[str, Any]) -> list[Change]:
        trace.header = rec
        trace.command = rec.get("command")
        trace.agent = agent_name({}, trace.command) or "?"
        try:
            when = datetime.fromisoformat(str(rec.get("started_at")).replace("Z", "+00:00"))
            trace.started = when.timestamp()
        except ValueError:
            trace.started = None
        return [Change("trace_started", trace)]

    def _tap(self, trace: Trace, rec: dict[str, Any], row: Row) -> list[Change]:
        event = row.label = as_str(rec.get("event")) or "?"
        if event == "dropped":
            count = rec.get("count")
            trace.dropped += count if type(count) is int else 1
        elif event in ("error", "kill"):
            trace.errors.append(
                f"{event}: {rec.get('cause') or rec.get('reason') or ''} {rec.get('message') or ''}".strip()
            )
        trace.stderr.add(row)
        if event == "exit":
            trace.ended = {"code": rec.get("code"), "signal": rec.get("signal")}
            return [Change("trace_ended", trace)]
        return []

    def _message(
        self,
        trace: Trace,
        msg: dict[str, Any],
        src: str,
        t_ns: int | None,
        seq: int | None,
        line: bytes,
        size: int,
    ) -> list[Change]:
        raw = line if len(line) <= RAW_KEPT else None
        method = as_str(msg.get("method"))
        params = as_dict(msg.get("params"))
        if method is not None and "id" in msg:  # a request
            key = (src, id_key(msg["id"]))
            session = as_str(params.get("sessionId"))
            trace.pending[key] = (method, t_ns, session)
            self._row(trace, session, Row(t_ns, seq, "request", method, session, raw=raw))
            if (
                method in REPLAYING
                and session
                and (method == "session/load" or params.get("replayFrom") is not None)
            ):
                replay = Replay(trace.name, session, key[1], method, t_ns or 0)
                self.replays[(trace.name, key[1], session)] = replay
                self.open[(trace.name, session)] = replay
                self._session(trace, session).state = "replaying"
                return [Change("replay_started", trace, replay)]
            return []
        if method is not None:  # a notification
            if method == "session/update":
                return self._update(trace, msg, t_ns, seq, raw, size)
            session = as_str(params.get("sessionId"))
            self._row(trace, session, Row(t_ns, seq, "notification", method, session, raw=raw))
            return []
        return self._response(trace, msg, src, t_ns, seq, raw)

    def _update(
        self,
        trace: Trace,
        msg: dict[str, Any],
        t_ns: int | None,
        seq: int | None,
        raw: bytes | None,
        size: int,
    ) -> list[Change]:
        params = as_dict(msg.get("params"))
        session = as_str(params.get("sessionId")) or "?"
        kind = as_str(as_dict(params.get("update")).get("sessionUpdate")) or "?"
        s = self._session(trace, session)
        s.counts[kind] += 1
        last = s.rows[-1] if s.rows else None
        changes: list[Change] = []
        replay = self._open_replay(trace.name, session)
        vendor = self._vendor(msg, raw)
        if vendor is not None:  # neither a history nor a live update (rules.md)
            s.add(Row(t_ns, seq, "vendor", vendor.path, session, raw=raw))
            if replay is not None and replay.t_vendor is None:
                replay.t_vendor, replay.vendor = t_ns, vendor.path
                changes.append(Change("vendor_event", trace, replay))
            return changes
        if kind == MARKER_KIND:
            s.add(Row(t_ns, seq, "marker", kind, session, raw=raw))
            if replay is not None and replay.t_marker is None:
                replay.t_marker = t_ns
                changes.append(Change("marker", trace, replay))
        elif kind == "state_update":
            s.add(Row(t_ns, seq, "state", kind, session, raw=raw))
        elif last is not None and last.kind == "updates" and last.label == kind:
            last.count += 1  # a streaming message is one row that grows
        else:
            s.add(Row(t_ns, seq, "updates", kind, session, raw=raw))
        if replay is not None and kind in HISTORY_KINDS and replay.counting:
            replay.updates += 1
            replay.bytes += size
            replay.t_last_history = t_ns
        return changes

    def _response(
        self,
        trace: Trace,
        msg: dict[str, Any],
        src: str,
        t_ns: int | None,
        seq: int | None,
        raw: bytes | None,
    ) -> list[Change]:
        asker = "agent" if src == "client" else "client"
        key = (asker, id_key(msg.get("id")))
        pending = trace.pending.pop(key, None)
        failed = "error" in msg
        kind = "error" if failed else "response"
        if pending is None:
            self._row(trace, None, Row(t_ns, seq, kind, "(orphan)", None, raw=raw))
            return []
        method, t_req, session = pending
        result = as_dict(msg.get("result"))
        changes: list[Change] = []
        if method == "initialize" and not trace.initialized:  # the first, as the analyzer
            trace.initialized = True
            info = as_dict(result.get("info") or result.get("agentInfo"))  # v2, v1
            trace.agent = agent_name(result, trace.command) or "?"
            trace.version = as_str(info.get("version"))
            version = result.get("protocolVersion")
            trace.protocol = version if type(version) is int else None
            changes.append(Change("agent_named", trace))
        session = session or as_str(result.get("sessionId"))
        latency = None if t_ns is None or t_req is None else (t_ns - t_req) / 1e6
        self._row(
            trace, session, Row(t_ns, seq, kind, method, session, latency_ms=latency, raw=raw)
        )
        if session is not None and method in OPENING:
            self._session(trace, session).state = "failed" if failed else "active"
        replay = self.replays.get((trace.name, key[1], session or ""))
        if replay is not None and replay.t_response is None:
            replay.t_response, replay.failed = t_ns or 0, failed
            if self.open.get((trace.name, replay.session)) is replay:
                del self.open[(trace.name, replay.session)]
            changes.append(Change("response", trace, replay))
        return changes

    def _vendor(self, msg: dict[str, Any], raw: bytes | None) -> VendorEvent | None:
        """The vendor end-of-replay event an update carries (its path's last segment must be
        in the line: most updates are passed over without a look at their `_meta`)."""
        if raw is not None and not any(needle in raw for needle in self.needles):
            return None
        return first_match(self.vendor, msg)

    def _open_replay(self, trace: str, session: str) -> Replay | None:
        return self.open.get((trace, session))

    def _session(self, trace: Trace, session: str) -> Session:
        s = trace.sessions.get(session)
        if s is None:
            s = trace.sessions[session] = Session(session, trace.name)
        return s

    def _row(self, trace: Trace, session: str | None, row: Row) -> None:
        if session is None:
            trace.stderr.add(row)  # the connection's own rows (initialize, orphans)
        else:
            self._session(trace, session).add(row)

    def open_requests(self, name: str) -> list[int]:
        """The tap stamps of the requests of a trace still waiting for their response."""
        trace = self.traces.get(name)
        return [] if trace is None else [t for _m, t, _s in trace.pending.values() if t is not None]
