"""A Chrome/Perfetto trace-event JSON of some traces, for ui.perfetto.dev or chrome://tracing.

One process per trace, one thread (track) per session plus a `connection` track for what has no
session: requests are complete spans ("X", name = method, from the request to its answer),
updates and other notifications are thread-scoped instants ("i"), `replay_complete` markers are
instants in category `marker`, and the gap of each replay (marker, or without one the last
history update, to the response) is a span in category `marker` (or `gap`). Times are integer
microseconds since the start of each trace. Spans that would overlap without nesting on one
track (a prompt sent while a resume is pending) go to an extra track of the same session, since
Perfetto drops improperly nested slices. Ordering-only traces (no timestamps) are left out and
named in `otherData`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from acp_trace import __version__
from acp_trace.analysis.replays import Window
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.render.gap_source import FALLBACK, MARKER, gap_start

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

CONNECTION = "(connection)"
GAP_MARKER = f"replay gap: {gap_start(MARKER)} → response"
GAP_FALLBACK = f"replay gap: {gap_start(FALLBACK)} → response"


@dataclass
class Span:
    """A complete event before it is given a track."""

    session: str
    name: str
    cat: str
    ts: int
    dur: int
    args: dict[str, Any] = field(default_factory=dict)


def trace_events(a: Analysis) -> dict[str, Any]:
    """The trace-event JSON object of an analysis: {"traceEvents": [...], ...}."""
    tl = a.timeline
    untimed = set(untimed_traces(tl))
    events: list[dict[str, Any]] = []
    windows: dict[str, list[Window]] = {}
    for w in a.facts.windows:
        windows.setdefault(w.trace, []).append(w)
    traces = tl["trace"].unique(maintain_order=True).to_list()
    timed = [t for t in traces if t not in untimed]
    for pid, trace in enumerate(timed, 1):
        part = tl.filter(pl.col("trace") == trace)
        events += _Process(pid, trace, part, tl, windows.get(trace, [])).events()
    other = {"generator": f"acp-trace {__version__}", "time": "microseconds since trace start"}
    if untimed:
        other["left_out_ordering_only"] = ", ".join(t for t in traces if t in untimed)
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def _us(t_ns: int) -> int:
    return (t_ns + 500) // 1000


class _Process:
    """The events of one trace."""

    def __init__(
        self, pid: int, trace: str, part: pl.DataFrame, tl: pl.DataFrame, windows: list[Window]
    ) -> None:
        self.pid, self.trace, self.part, self.tl, self.windows = pid, trace, part, tl, windows
        self.t_ns = tl["t_ns"]
        self.tids: dict[tuple[str, int], int] = {}
        self.out: list[dict[str, Any]] = []

    def events(self) -> list[dict[str, Any]]:
        spans = self._request_spans() + self._gap_spans()
        instants = self._instants()
        for session in [CONNECTION, *dict.fromkeys(s.session for s in spans), *instants]:
            self._tid(session, 0)
        self._place(spans)
        for session, items in instants.items():
            tid = self._tid(session, 0)
            self.out += [{**i, "pid": self.pid, "tid": tid} for i in items]
        return self._metadata() + sorted(self.out, key=lambda e: (e["tid"], e["ts"]))

    def _tid(self, session: str, lane: int) -> int:
        key = (session, lane)
        if key not in self.tids:
            self.tids[key] = len(self.tids)
        return self.tids[key]

    def _request_spans(self) -> list[Span]:
        rows = self.part.filter(pl.col("kind") == "request", pl.col("t_ns").is_not_null())
        last = int(self.part["t_ns"].max() or 0)  # type: ignore[arg-type]
        spans = []
        cols = ("seq", "t_ns", "src", "method", "id", "session", "peer_row")
        for seq, t_ns, src, method, mid, session, peer in rows.select(cols).iter_rows():
            end = self.t_ns[peer] if peer is not None else None
            answer = self._answer(peer)
            start = _us(t_ns)
            stop = _us(end if end is not None else last)
            cat = "request" if src == "client" else "agent_request"
            args = {"id": mid, "seq": seq, "answer": answer}
            spans.append(Span(session or CONNECTION, method or "?", cat, start, stop - start, args))
        return spans

    def _answer(self, peer: int | None) -> str:
        if peer is None:
            return "none (unanswered when the trace ends)"
        if self.tl["kind"][peer] == "error":
            return f"error {self.tl['error_code'][peer]}"
        return "response"

    def _gap_spans(self) -> list[Span]:
        spans = []
        for w in self.windows:
            if not w.replaying or w.end not in ("response", "error") or w.end_row is None:
                continue
            end = self.t_ns[w.end_row]
            for stats in w.sessions.values():
                row, source = stats.gap_origin()
                start = self.t_ns[row] if row is not None else None
                if start is None or end is None or source is None:
                    continue
                name = f"replay gap: {gap_start(source)} → response"
                cat = {MARKER: "marker", FALLBACK: "gap"}.get(source, "vendor")
                args = {"request_id": w.request_id, "method": w.method, "ms": (end - start) / 1e6}
                spans.append(
                    Span(stats.session, name, cat, _us(start), _us(end) - _us(start), args)
                )
        return spans

    def _instants(self) -> dict[str, list[dict[str, Any]]]:
        rows = self.part.filter(
            pl.col("t_ns").is_not_null(),
            (pl.col("kind") == "notification")
            | (pl.col("kind") == "event")
            | (pl.col("kind").is_in(["response", "error"]) & pl.col("peer_row").is_null()),
        )
        out: dict[str, list[dict[str, Any]]] = {}
        cols = ("seq", "t_ns", "kind", "method", "update_kind", "update_class", "session", "event")
        for seq, t_ns, kind, method, uk, cls, session, event in rows.select(cols).iter_rows():
            name, cat = _instant_name(kind, method, uk, cls, event)
            item = {"name": name, "cat": cat, "ph": "i", "s": "t", "ts": _us(t_ns)}
            item["args"] = {"seq": seq}
            out.setdefault(session or CONNECTION, []).append(item)
        return out

    def _place(self, spans: list[Span]) -> None:
        """Give each span the first track of its session where it nests properly."""
        stacks: dict[tuple[str, int], list[int]] = {}
        for s in sorted(spans, key=lambda s: (s.ts, -s.dur)):
            lane = 0
            while True:
                stack = stacks.setdefault((s.session, lane), [])
                while stack and stack[-1] <= s.ts:
                    stack.pop()
                if not stack or stack[-1] >= s.ts + s.dur:
                    stack.append(s.ts + s.dur)
                    break
                lane += 1
            event = {"name": s.name, "cat": s.cat, "ph": "X", "ts": s.ts, "dur": s.dur}
            self.out.append(
                {**event, "pid": self.pid, "tid": self._tid(s.session, lane), "args": s.args}
            )

    def _metadata(self) -> list[dict[str, Any]]:
        agent = (
            self.tl.filter(pl.col("trace") == self.trace).select("agent", "agent_version").row(0)
        )
        who = " ".join(str(x) for x in agent if x) or "unknown agent"
        meta = [
            _meta(self.pid, 0, "process_name", {"name": f"{Path(self.trace).name} ({who})"}),
            _meta(self.pid, 0, "process_sort_index", {"sort_index": self.pid}),
        ]
        for (session, lane), tid in self.tids.items():
            name = "connection" if session == CONNECTION else f"session {session}"
            if lane:
                name += f" (overlapping requests {lane + 1})"
            meta.append(_meta(self.pid, tid, "thread_name", {"name": name}))
            order = self.tids[(session, 0)] * 1000 + lane  # a session's extra tracks follow it
            meta.append(_meta(self.pid, tid, "thread_sort_index", {"sort_index": order}))
        return meta


def _meta(pid: int, tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "ts": 0, "args": args}


def _instant_name(
    kind: str, method: str | None, uk: str | None, cls: str | None, event: str | None
) -> tuple[str, str]:
    if kind == "event":
        return f"tap {event}", "tap"
    if kind in ("response", "error"):
        return "response without request", "orphan"
    if method == "session/update":
        if cls == "marker":
            return "replay_complete", "marker"
        if cls == "vendor":
            return f"{uk or 'session/update'} (vendor end-of-replay event)", "vendor"
        return uk or "session/update", cls or "update"
    return method or "?", "notification"
