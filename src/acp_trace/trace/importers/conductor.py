"""The ACP conductor's `--trace` file (crate agent-client-protocol-conductor, earlier sacp-conductor).

NDJSON events `{"type": "request"|"response"|"notification", "ts", "from", "to", ...}` with
`ts` in seconds since the conductor started. Two generations (docs/importing.md):

- sacp-conductor <= 10 names components `client`, `proxy:N`, `agent` and writes a failed
  response's payload as `{"error": "<message>"}` (the error's Display text, no code);
- sacp-conductor 11 and agent-client-protocol-conductor 2.x write the Debug names of the
  component index, `Client`, `Proxy(N)`, `Agent`, and full JSON-RPC error objects. Without
  proxies a trace-only proxy stands between `Client` and `Agent`; with proxies the last proxy's
  successor (the agent) is named `Proxy(N)` with N the number of proxies.

The leg between the client and the first hop, and the leg between the last hop and the agent,
each become one trace; legs between proxies and MCP-over-ACP events are counted, not kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_trace.jsonrpc import as_int
from acp_trace.trace.importers._common import TraceBuilder, Unparsed, id_text, ndjson

TYPES = ("request", "response", "notification")
_OLD_PROXY = re.compile(r"proxy:(\d+)")
_NEW_PROXY = re.compile(r"Proxy\((\d+)\)")

INT64_LIMIT = 2**63  # a record's t_ns is a signed 64-bit integer


def is_event(value: Any) -> bool:
    """True for a conductor trace event: a `type` of its own with `from` and `to`."""
    return (
        isinstance(value, dict) and value.get("type") in TYPES and "from" in value and "to" in value
    )


def generation(events: list[dict[str, Any]]) -> str:
    """`debug-names` (sacp-conductor 11, agent-client-protocol-conductor 2.x) or `lowercase`."""
    names = {str(e.get(k)) for e in events for k in ("from", "to")}
    new = {"Client", "Agent"} & names or any(_NEW_PROXY.fullmatch(n) for n in names)
    return "debug-names" if new else "lowercase"


def chain(events: list[dict[str, Any]]) -> list[str]:
    """The components the events name, client first, agent last (as this generation names them).

    In the Debug-names generation with proxies, the agent has no name of its own: the last
    proxy's successor is `Proxy(N)`, the one proxy index that never receives a request.
    """
    names = {str(e.get(k)) for e in events for k in ("from", "to")}
    if generation(events) == "lowercase":
        old = sorted(int(m.group(1)) for n in names if (m := _OLD_PROXY.fullmatch(n)))
        return ["client", *(f"proxy:{i}" for i in old), "agent"]
    numbers = sorted(int(m.group(1)) for n in names if (m := _NEW_PROXY.fullmatch(n)))
    receivers = {str(e.get("to")) for e in events if e.get("type") != "response"}
    proxies = [f"Proxy({i})" for i in numbers]
    if "Agent" in names or not proxies or proxies[-1] in receivers:
        return ["Client", *proxies, "Agent"]
    return ["Client", *proxies]


@dataclass
class _Converter:
    """Converts events one by one into the traces of the kept legs."""

    legs: dict[str, tuple[str, str]]  # trace key -> (client-side end, agent-side end)
    builders: dict[str, TraceBuilder]
    ts0: float | None
    mcp_requests: set[tuple[str, str, str]] = field(default_factory=set)
    other_legs: int = 0

    def leg(self, frm: str, to: str) -> str | None:
        return next((k for k, ends in self.legs.items() if {frm, to} == set(ends)), None)

    def event(self, line: int, value: Any) -> tuple[str | None, str]:
        """Convert one event; returns (why it cannot be converted or None, its trace key)."""
        first = next(iter(self.builders))
        if isinstance(value, Unparsed):
            return "not JSON", first
        if not is_event(value):
            return "not a conductor trace event", first
        frm, to = str(value["from"]), str(value["to"])
        leg = self.leg(frm, to)
        if leg is None:
            self.other_legs += 1
            return None, first
        builder = self.builders[leg]
        if self._is_mcp(value, frm, to):
            skipped = builder.header["skipped"]
            skipped["mcp"] = skipped.get("mcp", 0) + 1
            return None, leg
        msg = _message(value)
        if isinstance(msg, str):
            return msg, leg
        src = "client" if frm == self.legs[leg][0] else "agent"
        seq = builder.message(self._t_ns(value.get("ts")), src, msg)
        error = msg.get("error")
        if isinstance(error, dict) and as_int(error.get("code")) is None:
            text = error.get("message")
            builder.header["error_code_unknown"].append(
                {"line": line, "seq": seq, "message": text if isinstance(text, str) else None}
            )
        return None, leg

    def _is_mcp(self, event: dict[str, Any], frm: str, to: str) -> bool:
        """MCP-over-ACP traffic (unwrapped by the conductor): not ACP messages of the leg."""
        key = id_text(event.get("id"))
        if event["type"] == "response":
            return (to, frm, key) in self.mcp_requests
        if event.get("protocol") != "mcp":
            return False
        if event["type"] == "request":
            self.mcp_requests.add((frm, to, key))
        return True

    def _t_ns(self, ts: Any) -> int | None:
        if self.ts0 is None or not isinstance(ts, int | float) or isinstance(ts, bool):
            return None
        try:
            t_ns = (ts - self.ts0) * 1e9
        except OverflowError:  # an integer no float holds (`10**400`)
            return None
        # beyond 64 bits (or infinite: `1e308` and `-1e308`) the source time says nothing
        return round(t_ns) if math.isfinite(t_ns) and abs(t_ns) < INT64_LIMIT else None


def _message(event: dict[str, Any]) -> dict[str, Any] | str:
    """The JSON-RPC message an event stands for, or why there is none."""
    kind = event["type"]
    if kind == "response":
        if "id" not in event:
            return "a response without id"
        if event.get("is_error") is True:
            return {"jsonrpc": "2.0", "id": event["id"], "error": _error(event.get("payload"))}
        return {"jsonrpc": "2.0", "id": event["id"], "result": event.get("payload")}
    method = event.get("method")
    if not isinstance(method, str):
        return f"a {kind} without method"
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind == "request":
        if "id" not in event:
            return "a request without id"
        msg["id"] = event["id"]
    msg["method"] = method
    if event.get("params") is not None:
        msg["params"] = event["params"]
    return msg


def _error(payload: Any) -> Any:
    """The error object of a failed response: as written (Debug-names generation), or, for
    sacp-conductor <= 10's `{"error": "<text>"}`, `{"message": "<text>"}` without a code."""
    if (
        isinstance(payload, dict)
        and set(payload) == {"error"}
        and isinstance(payload["error"], str)
    ):
        return {"message": payload["error"]}
    return payload


def _legs(names: list[str]) -> dict[str, tuple[str, str]]:
    if len(names) == 2:
        return {"": (names[0], names[1])}
    return {"client": (names[0], names[1]), "agent": (names[-2], names[-1])}


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert a conductor trace into one trace per kept leg (one without proxies, else two)."""
    entries = list(ndjson(text))
    events = [v for _, v in entries if is_event(v)]
    names = chain(events)
    legs = _legs(names)
    ts0 = next((e["ts"] for e in events if isinstance(e.get("ts"), int | float)), None)
    builders = {
        key: TraceBuilder(
            f"{path}#{key}" if key else str(path),
            {
                "imported_from": "conductor",
                "source": str(path),
                "timing": "source",
                "generation": generation(events),
                "chain": names,
                "leg": list(ends),
                "dropped": None,
                "skipped": {},
                "error_code_unknown": [],
            },
        )
        for key, ends in legs.items()
    }
    conv = _Converter(legs, builders, ts0)
    for line, value in entries:
        problem, key = conv.event(line, value)
        if problem is not None:
            builders[key].unconvertible(line, problem)
    for builder in builders.values():
        builder.header["skipped"]["other_legs"] = conv.other_legs
    if generation(events) == "debug-names" and len(builders) == 2:
        # trace_request_or_notification keeps only requests and notifications that enter a
        # proxy from its predecessor or its successor, or that go to a successor named Agent
        builders["client"].header["not_traced"] = ["requests and notifications to the client"]
        builders["agent"].header["not_traced"] = ["requests and notifications to the agent"]
    return list(builders.values())
