"""The ACP conductor's `--trace` file (crate agent-client-protocol-conductor, earlier sacp-conductor).

NDJSON events `{"type": "request"|"response"|"notification", "ts", "from", "to", ...}` with
`ts` in seconds since the conductor started and `from`/`to` among `client`, `proxy:N`, `agent`.
The leg between the client and the first hop, and the leg between the last hop and the agent,
each become one trace; legs between proxies and MCP-over-ACP events are counted, not kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_trace.trace.importers._common import TraceBuilder, Unparsed, id_text, ndjson

TYPES = ("request", "response", "notification")
_PROXY = re.compile(r"proxy:(\d+)")


def is_event(value: Any) -> bool:
    """True for a conductor trace event: a `type` of its own with `from` and `to`."""
    return (
        isinstance(value, dict) and value.get("type") in TYPES and "from" in value and "to" in value
    )


def chain(events: list[dict[str, Any]]) -> list[str]:
    """The components the events name, client first: client, proxy:0, ..., agent."""
    names = {str(e.get(k)) for e in events for k in ("from", "to")}
    proxies = sorted(int(m.group(1)) for n in names if (m := _PROXY.fullmatch(n)))
    return ["client", *(f"proxy:{i}" for i in proxies), "agent"]


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

    def event(self, value: Any) -> tuple[str | None, str]:
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
        if self._is_mcp(value, frm, to):
            skipped = self.builders[leg].header["skipped"]
            skipped["mcp"] = skipped.get("mcp", 0) + 1
            return None, leg
        msg = _message(value)
        if isinstance(msg, str):
            return msg, leg
        src = "client" if frm == self.legs[leg][0] else "agent"
        self.builders[leg].message(self._t_ns(value.get("ts")), src, msg)
        return None, leg

    def _is_mcp(self, event: dict[str, Any], frm: str, to: str) -> bool:
        """MCP-over-ACP traffic (unwrapped by the conductor): not ACP messages of the leg."""
        key = id_text(event.get("id"))
        if event["type"] == "response":
            return (to, frm, key) in self.mcp_requests or event.get("error_domain") == "mcp"
        if event.get("protocol") != "mcp":
            return False
        if event["type"] == "request":
            self.mcp_requests.add((frm, to, key))
        return True

    def _t_ns(self, ts: Any) -> int | None:
        if self.ts0 is None or not isinstance(ts, int | float) or isinstance(ts, bool):
            return None
        return round((ts - self.ts0) * 1e9)


def _message(event: dict[str, Any]) -> dict[str, Any] | str:
    """The JSON-RPC message an event stands for, or why there is none."""
    kind = event["type"]
    if kind == "response":
        if "id" not in event:
            return "a response without id"
        outcome = "error" if event.get("is_error") is True else "result"
        return {"jsonrpc": "2.0", "id": event["id"], outcome: event.get("payload")}
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


def _legs(names: list[str]) -> dict[str, tuple[str, str]]:
    if len(names) == 2:
        return {"": ("client", "agent")}
    return {"client": ("client", names[1]), "agent": (names[-2], "agent")}


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
                "chain": names,
                "leg": list(ends),
                "dropped": None,
                "skipped": {},
            },
        )
        for key, ends in legs.items()
    }
    conv = _Converter(legs, builders, ts0)
    for line, value in entries:
        problem, key = conv.event(value)
        if problem is not None:
            builders[key].unconvertible(line, problem)
    for builder in builders.values():
        builder.header["skipped"]["other_legs"] = conv.other_legs
    return list(builders.values())
