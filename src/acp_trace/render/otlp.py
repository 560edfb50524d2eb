"""OpenTelemetry out: an OTLP/JSON `ExportTraceServiceRequest` of an analysis.

One resource per trace (service.name = the agent), one OTel trace per acp-trace trace; a root
span `acp connection` over the whole recording; a span per request (name = method) from the
request to its answer (to the end of the recording when unanswered), with the OTel JSON-RPC
attributes (`rpc.system`, `rpc.method`, `rpc.jsonrpc.request_id`, `rpc.jsonrpc.error_code`)
and `acp.session.id`, `acp.side` (who sent it); a span per replay row (`replay SESSION`) under
its resume request, with the marker as a span event and the gap and counts as attributes; a
span per prompt turn (`prompt turn`) holding its `session/prompt` request. Ids follow OTLP's
JSON encoding (hex, 16-byte trace ids, 8-byte span ids, derived from the trace id so a re-export
gives the same ids); times are Unix nanoseconds as decimal strings: the header's `started_at`
plus each record's `t_ns`. A trace without timestamps or without `started_at`, or with a time
OTLP cannot hold (before 1970 or from 2554-07-21 on: its times are unsigned 64-bit
nanoseconds), is left out and named in the second value `otlp_document` returns. Every string
is valid UTF-8: a lone surrogate (in an error message, say) is written as U+FFFD, since
protobuf's JSON mapping refuses a `\\ud800` escape and with it the whole batch; text the reader
holds in its columns (methods, session ids, agent names) is as every other command shows it.
The OpenTelemetry Collector's `otlpjsonfile` receiver reads the file as it is.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from acp_trace import __version__
from acp_trace.analysis.replays import outcome
from acp_trace.jsonrpc import loads
from acp_trace.trace.format import started_at

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

INTERNAL = 1  # SpanKind.SPAN_KIND_INTERNAL: the tap observes both sides
STATUS_ERROR = 2


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    """`value` as UTF-8 holds it: a lone surrogate (a cut emoji in an error message) becomes
    U+FFFD. Written as a `\\ud800` escape it would be valid JSON that protobuf's JSON mapping
    refuses, and with it the receiver refuses the whole batch."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": _text(str(value))}


def _attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _id(seed: str, size: int) -> str:
    """A stable id of `size` bytes (hex): never all zeros, which OTLP forbids."""
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:size]
    return (digest if any(digest) else b"\x01" + digest[1:]).hex()


def _epoch_ns(started: Any) -> int | None:
    """The header's start in ns since the Unix epoch; None when it has none, or one before
    1970 (OTLP's times are unsigned)."""
    when = started_at(started)
    if when is None or when < EPOCH:
        return None
    return int((when - EPOCH).total_seconds()) * 10**9 + when.microsecond * 1000


UINT64_END = 2**64  # OTLP's times are fixed64 nanoseconds since the epoch: [0, 2**64)


def _placeable(start: int, t_ns: pl.Series) -> bool:
    """True when the trace has times and each of them, from `start`, is an OTLP time (not
    before 1970, not after 2554-07-21): a record stamped -5e18 ns, or a start in 2600, is not."""
    if t_ns.len() == 0:
        return False
    first, last = int(t_ns.min()), int(t_ns.max())  # type: ignore[arg-type]
    return start + first >= 0 and start + last < UINT64_END


def otlp_document(a: Analysis) -> tuple[dict[str, Any], list[str]]:
    """The ExportTraceServiceRequest as a JSON-ready dict, and the traces left out."""
    resources, left_out = [], []
    tl = a.timeline
    for trace, head in a.headers.items():
        part = tl.filter(pl.col("trace") == trace)
        start = _epoch_ns(head.get("started_at"))
        if start is None or not _placeable(start, part["t_ns"].drop_nulls()):
            if part.filter(pl.col("kind") != "skipped").height:
                left_out.append(trace)
            continue
        resources.append(_Trace(a, trace, part, start).resource())
    return {"resourceSpans": resources}, left_out


class _Trace:
    """The spans of one trace."""

    def __init__(self, a: Analysis, trace: str, part: pl.DataFrame, start_ns: int) -> None:
        self.a, self.trace, self.part, self.start = a, trace, part, start_ns
        self.trace_id = _id(f"trace:{trace}:{start_ns}", 16)
        self.t_ns = a.timeline["t_ns"]
        self.spans: list[dict[str, Any]] = []
        self.end = int(part["t_ns"].drop_nulls().max() or 0)  # type: ignore[arg-type]

    def at(self, row: int | None) -> int | None:
        value = None if row is None else self.t_ns[row]
        return None if value is None else self.start + int(value)

    def span(
        self,
        key: str,
        name: str,
        begin: int,
        end: int,
        parent: str | None,
        attrs: dict[str, Any],
        events: list[dict[str, Any]] | None = None,
        status: dict[str, Any] | None = None,
    ) -> str:
        span_id = _id(f"{self.trace_id}:{key}", 8)
        span: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": span_id,
            "name": _text(name),
            "kind": INTERNAL,
            "startTimeUnixNano": str(begin),
            "endTimeUnixNano": str(max(begin, end)),
            "attributes": _attrs(attrs),
        }
        if parent:
            span["parentSpanId"] = parent
        if events:
            span["events"] = [{**e, "name": _text(e["name"])} for e in events]
        if status:
            span["status"] = {**status, "message": _text(status["message"])}
        self.spans.append(span)
        return span_id

    def resource(self) -> dict[str, Any]:
        first = int(self.part["t_ns"].drop_nulls().min() or 0)  # type: ignore[arg-type]
        agent = self.part["agent"][0] if self.part.height else None
        root = self.span(
            "root",
            "acp connection",
            self.start + first,
            self.start + self.end,
            None,
            {"acp.trace": self.trace, "acp.protocol": self.part["protocol"][0]},
        )
        turns = self._turns(root)
        requests = self._requests(root, turns)
        self._replays(requests)
        resource = _attrs(
            {
                "service.name": agent or "unknown agent",
                "service.version": self.part["agent_version"][0],
                "acp.trace": self.trace,
            }
        )
        scope = {"name": "acp-trace", "version": __version__}
        return {
            "resource": {"attributes": resource},
            "scopeSpans": [{"scope": scope, "spans": self.spans}],
        }

    def _turns(self, root: str) -> dict[int, str]:
        """A span per prompt turn; its request row -> the turn's span id."""
        out = {}
        for turn in self.a.turn_facts.turns:
            if turn.trace != self.trace:
                continue
            begin = self.at(turn.req_row)
            if begin is None:
                continue
            end = self.at(turn.end_row) or self.start + self.end
            attrs = {"acp.session.id": turn.session, "acp.stop_reason": turn.stop_reason}
            out[turn.req_row] = self.span(
                f"turn:{turn.req_row}", "prompt turn", begin, end, root, attrs
            )
        return out

    def _requests(self, root: str, turns: dict[int, str]) -> dict[int, str]:
        """A span per request; its row -> span id."""
        out = {}
        msgs = self.a.timeline["msg"]
        cols = ("row", "src", "id", "method", "session", "peer_row")
        requests = self.part.filter(pl.col("kind") == "request").select(cols)
        for row, src, mid, method, session, peer in requests.iter_rows():
            begin = self.at(row)
            if begin is None:
                continue
            end = self.at(peer) if peer is not None else None
            attrs: dict[str, Any] = {
                "rpc.system": "jsonrpc",
                "rpc.jsonrpc.version": "2.0",
                "rpc.method": method,
                "rpc.jsonrpc.request_id": mid,
                "acp.session.id": session,
                "acp.side": src,
                "acp.unanswered": True if peer is None else None,
            }
            status = None
            if peer is not None and self.a.timeline["kind"][peer] == "error":
                error = loads(msgs[peer]).get("error")
                error = error if isinstance(error, dict) else {}
                attrs["rpc.jsonrpc.error_code"] = self.a.timeline["error_code"][peer]
                attrs["rpc.jsonrpc.error_message"] = (
                    error.get("message") if isinstance(error.get("message"), str) else None
                )
                status = {
                    "code": STATUS_ERROR,
                    "message": str(attrs["rpc.jsonrpc.error_message"] or "error"),
                }
            parent = turns.get(row, root)
            out[row] = self.span(
                f"req:{row}",
                method or "request",
                begin,
                end or self.start + self.end,
                parent,
                attrs,
                status=status,
            )
        return out

    def _replays(self, requests: dict[int, str]) -> None:
        """A span per replay row under its request: the marker as an event, the gap as an
        attribute."""
        for w in self.a.facts.windows:
            if w.trace != self.trace or not w.replaying or w.req_row not in requests:
                continue
            begin = self.at(w.req_row)
            assert begin is not None
            end = self.at(w.end_row) or self.start + self.end
            for stats in w.sessions.values():
                marker = self.at(stats.marker_row)
                last = self.at(stats.last_history_row)
                origin, source = stats.gap_origin()
                gap_from = self.at(origin)
                answered = w.end in ("response", "error")
                events = []
                if marker is not None:
                    events.append(
                        {"timeUnixNano": str(marker), "name": "replay_complete", "attributes": []}
                    )
                vendor = self.at(stats.vendor_row)
                if vendor is not None:
                    name = f"vendor end-of-replay event {stats.vendor_path}"
                    events.append({"timeUnixNano": str(vendor), "name": name, "attributes": []})
                if last is not None:
                    events.append(
                        {"timeUnixNano": str(last), "name": "last history update", "attributes": []}
                    )
                attrs = {
                    "acp.replay.outcome": outcome(w, stats),
                    "acp.session.id": stats.session,
                    "acp.parent_session.id": stats.parent,
                    "acp.replay.method": w.method,
                    "acp.replay.history_updates": stats.history_updates,
                    "acp.replay.live_updates": stats.live_updates,
                    "acp.replay.gap_ms": None
                    if gap_from is None or not answered
                    else (end - gap_from) / 1e6,
                    "acp.replay.gap_from": None if gap_from is None else source,
                }
                self.span(
                    f"replay:{w.index}:{stats.session}",
                    f"replay {stats.session}",
                    begin,
                    end,
                    requests[w.req_row],
                    attrs,
                    events,
                )
