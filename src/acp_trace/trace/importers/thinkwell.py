"""@thinkwell/conductor's JSONL trace (npm 0.5.7: `new Conductor({trace: {path}})`).

One line per message the conductor's event loop handles, written before it handles it:
`{"timestamp": ISO 8601 (ms), "direction": "left-to-right"|"right-to-left"|"internal", "source",
"target", "message": ConductorMessage}`, where a left-to-right message has `targetIndex` and a
right-to-left one `sourceIndex` (`{"type": "successor"}` is the agent, `{"type": "proxy",
"index": i}`), each with a `dispatch` `{"type": "request"|"notification"|"response", ...}`.

What the source does, and what follows for the import (docs/importing.md):

- requests are logged with the id they came with, then forwarded under an id of the
  conductor's own counter (`nextRequestId++`, from 1), and the answer comes back under that
  id: the counter is replayed here to give each answer the id of the request it answers;
- responses written by the client never enter the event loop: they are not in the trace.

The leg between the client and the first hop and the leg between the last hop and the agent
each become one trace (one without proxies); `internal` lines (the MCP bridge, shutdown) are
counted, not kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acp_trace.trace.importers._common import TraceBuilder, Unparsed, ndjson

DIRECTIONS = ("left-to-right", "right-to-left", "internal")
_PROXY = re.compile(r"proxy\[(\d+)\]")
_INIT = ("initialize", "acp/initialize")


def is_line(value: Any) -> bool:
    """True for a trace line: a `direction`, `source`, `target` and a `message` object."""
    return (
        isinstance(value, dict)
        and value.get("direction") in DIRECTIONS
        and {"source", "target", "timestamp"} <= set(value)
        and isinstance(value.get("message"), dict)
    )


def proxy_count(lines: list[dict[str, Any]]) -> int:
    """How many proxies the chain has: the targetIndex that reaches `agent`, else the proxies named."""
    for line in lines:
        msg = line["message"]
        if msg.get("type") == "left-to-right" and line.get("target") == "agent":
            index = msg.get("targetIndex")
            if isinstance(index, int) and not isinstance(index, bool):
                return index
    names = {str(line.get(k)) for line in lines for k in ("source", "target")}
    indexes = [int(m.group(1)) for n in names if (m := _PROXY.fullmatch(n))]
    return max(indexes) + 1 if indexes else 0


def _ms(stamp: Any) -> int | None:
    """An ISO 8601 timestamp as milliseconds since the epoch, or None."""
    if not isinstance(stamp, str):
        return None
    try:
        return round(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


@dataclass
class _Replay:
    """The conductor's id counter and pending requests, replayed line by line.

    `bridge` says whether the MCP bridge is on (the default, `mcpBridgeMode: "http"`): then a
    `session/new` takes one id for its bridge session before it is forwarded.
    """

    proxies: int
    bridge: bool
    next_id: int = 1
    initialized: bool = False
    agent_acp_transport: bool = False
    init_id: int | None = None
    # forwarded id -> (hop, original id, whether the request went left to right)
    pending: dict[str, tuple[int, Any, bool]] = field(default_factory=dict)
    unmatched: int = 0

    def take(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def hop(self, msg: dict[str, Any]) -> int | None:
        """The hop a message travels: hop h is between component h-1 and h (the client is -1,
        the agent is `proxies`), so a left-to-right message to target t travels hop t."""
        if msg.get("type") == "left-to-right":
            index = msg.get("targetIndex")
            return index if isinstance(index, int) and not isinstance(index, bool) else None
        source = msg.get("sourceIndex")
        if not isinstance(source, dict):
            return None
        if source.get("type") == "successor":
            return self.proxies
        index = source.get("index")
        return index if isinstance(index, int) and not isinstance(index, bool) else None

    def request(self, msg: dict[str, Any], hop: int, rid: Any, method: Any) -> None:
        """Take the ids the conductor takes to forward this request (handleLeftToRight, ...)."""
        if msg["type"] == "left-to-right" and hop == 0 and method in _INIT:
            if self.initialized:
                return  # answered "already initialized" at once, nothing forwarded
            self.initialized = True
            self.init_id = self.take()
            self.pending[str(self.init_id)] = (hop, rid, True)
            return
        bridged = self.bridge and not self.agent_acp_transport
        if msg["type"] == "left-to-right" and method == "session/new" and bridged:
            self.take()  # `session-${generateRequestId()}`, the bridge's session key
        self.pending[str(self.take())] = (hop, rid, msg["type"] == "left-to-right")

    def response(self, rid: Any, result: Any) -> tuple[int, Any, bool] | None:
        """(hop, original id, rightward) of the request a response answers, or None."""
        found = self.pending.pop(str(rid), None)
        if found is None:
            self.unmatched += 1
            return None
        if self.init_id is not None and str(rid) == str(self.init_id):
            caps = result.get("capabilities") if isinstance(result, dict) else None
            self.agent_acp_transport = isinstance(caps, dict) and bool(
                caps.get("mcp_acp_transport")
            )
        return found

    def internal(self, msg: dict[str, Any]) -> None:
        """Ids the MCP bridge's messages take (handleMcpConnectionReceived, ...)."""
        kind = msg.get("type")
        dispatch = msg.get("dispatch")
        received = kind == "mcp-connection-received"
        if received or (kind == "mcp-client-to-server" and _is_request(dispatch)):
            self.take()  # the dispatch's own id
            self.take()  # forwarding it


def _is_request(dispatch: Any) -> bool:
    return isinstance(dispatch, dict) and dispatch.get("type") == "request"


def _replay(lines: list[dict[str, Any]], proxies: int, bridge: bool) -> tuple[_Replay, list[Any]]:
    """Replay the counter over every line; returns it and, per line, what `response` found."""
    state = _Replay(proxies, bridge)
    answers: list[Any] = []
    for line in lines:
        msg = line["message"]
        dispatch = msg.get("dispatch")
        answers.append(None)
        if line["direction"] == "internal":
            state.internal(msg)
            continue
        hop = state.hop(msg)
        if not isinstance(dispatch, dict) or hop is None:
            continue
        if dispatch.get("type") == "request":
            state.request(msg, hop, dispatch.get("id"), dispatch.get("method"))
        elif dispatch.get("type") == "response":
            answers[-1] = state.response(dispatch.get("id"), dispatch.get("result"))
    return state, answers


def _message(dispatch: dict[str, Any], answer: Any) -> dict[str, Any] | str:
    """The JSON-RPC message of a dispatch, or why there is none."""
    kind = dispatch.get("type")
    if kind == "response":
        rid = answer[1] if answer is not None else dispatch.get("id")
        if "error" in dispatch:
            return {"jsonrpc": "2.0", "id": rid, "error": dispatch["error"]}
        return {"jsonrpc": "2.0", "id": rid, "result": dispatch.get("result")}
    method = dispatch.get("method")
    if kind not in ("request", "notification") or not isinstance(method, str):
        return f"a dispatch of type {kind!r} without method"
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind == "request":
        msg["id"] = dispatch.get("id")
    msg["method"] = method
    if "params" in dispatch:
        msg["params"] = dispatch["params"]
    return msg


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert a thinkwell conductor trace into one trace per kept leg."""
    entries = list(ndjson(text))
    lines = [v for _, v in entries if is_line(v)]
    proxies = proxy_count(lines)
    on, on_answers = _replay(lines, proxies, bridge=True)
    off, off_answers = _replay(lines, proxies, bridge=False)
    state, answers = (off, off_answers) if off.unmatched < on.unmatched else (on, on_answers)
    stamps = [ms for line in lines if (ms := _ms(line.get("timestamp"))) is not None]
    keys = {0: ""} if proxies == 0 else {0: "client", proxies: "agent"}
    common = {
        "imported_from": "thinkwell",
        "source": str(path),
        "timing": "source" if stamps else "ordering-only",
        "proxies": proxies,
        "mcp_bridge": state.bridge,
        "not_traced": ["responses sent by the client"],
        "responses_not_traced_from": ["client"],
        "dropped": None,
    }
    builders = {
        hop: TraceBuilder(f"{path}#{key}" if key else str(path), {**common, "hop": hop})
        for hop, key in keys.items()
    }
    first = builders[0]
    skipped = {"internal": 0, "other_legs": 0}
    answer_of = iter(answers)
    t0 = stamps[0] if stamps else None
    for number, value in entries:
        if isinstance(value, Unparsed) or not is_line(value):
            first.unconvertible(number, "not JSON" if isinstance(value, Unparsed) else
                                "not a thinkwell conductor trace line")  # fmt: skip
            continue
        answer = next(answer_of)
        problem = _line(builders, value, answer, state, t0, skipped)
        if problem is not None:
            first.unconvertible(number, problem)
    for builder in builders.values():
        builder.header["skipped"] = skipped
        builder.header["unmatched_responses"] = state.unmatched
    return list(builders.values())


def _line(
    builders: dict[int, TraceBuilder],
    value: dict[str, Any],
    answer: Any,
    state: _Replay,
    t0: int | None,
    skipped: dict[str, int],
) -> str | None:
    """Append the record of one line; returns why it cannot be converted, or None."""
    msg = value["message"]
    if value["direction"] == "internal":
        skipped["internal"] += 1
        return None
    dispatch = msg.get("dispatch")
    if not isinstance(dispatch, dict):
        return "a message without dispatch"
    hop = answer[0] if answer is not None else state.hop(msg)
    if hop is None:
        return "a message without targetIndex or sourceIndex"
    if hop not in builders:
        skipped["other_legs"] += 1
        return None
    record = _message(dispatch, answer)
    if isinstance(record, str):
        return record
    rightward = msg.get("type") == "left-to-right"
    if answer is not None:
        rightward = not answer[2]  # a response goes opposite its request
    ms = _ms(value.get("timestamp"))
    t_ns = None if ms is None or t0 is None else (ms - t0) * 1_000_000
    builders[hop].message(t_ns, "client" if rightward else "agent", record)
    return None
