"""Bare JSON-RPC captures: messages one per line, or a JSON array; no timestamps, no direction.

Each message's sender is inferred from the protocol (see docs/importing.md): the method, the
requests each side has pending, and, for a result whose id both sides have pending, the shape
of the result (result_shapes.json, generated from the ACP schemas by make_result_shapes.py).
Where the protocol does not decide, a choice is made and recorded in the header's `ambiguous`
list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from acp_trace.jsonrpc import (
    CANCEL_METHOD,
    is_message,
    loads,
    message_kind,
    other_side,
)
from acp_trace.trace.importers._common import (
    TraceBuilder,
    Unparsed,
    dumps,
    id_text,
    message_payload,
    ndjson_raw,
    parse_array,
    parse_stream,
)

# Methods the client sends (the agent's methods), from the ACP meta.json files of schema
# v1 and v2, stable and unstable. Any other `session/...` is taken as the client's too.
CLIENT_SENT = frozenset(
    {"initialize", "authenticate", "logout", "session/cancel", "session/set_mode"}
)
CLIENT_PREFIXES = ("session/", "auth/", "providers/", "nes/", "document/")
# Methods the agent sends (the client's methods).
AGENT_SENT = frozenset(
    {"session/update", "session/request_permission", "mcp/connect", "mcp/disconnect"}
)
AGENT_PREFIXES = ("fs/", "terminal/", "elicitation/")
# In the agent's and in the client's method lists alike.
EITHER_SIDE = frozenset({"mcp/message"})

Guess = tuple[str | None, str | None]  # (sender, or None with why it is ambiguous)
Shape = tuple[frozenset[str], frozenset[str] | None]  # (required keys, listed keys or None: open)


@cache
def result_shapes() -> dict[str, list[Shape]]:
    """Each method's result shapes, from the shipped result_shapes.json."""
    text = files("acp_trace.trace.importers").joinpath("result_shapes.json").read_text()
    return {
        method: [
            (
                frozenset(s["required"]),
                None if s["properties"] is None else frozenset(s["properties"]),
            )
            for s in shapes
        ]
        for method, shapes in json.loads(text)["methods"].items()
    }


def result_fits(method: str | None, result: Any) -> bool | None:
    """Whether `result` can answer a `method` request, by the shape the ACP schema gives its
    result: every required key present and no key the type does not list (ACP forbids custom
    root fields: they go in `_meta`). None when the schema cannot say (an unknown method, a
    result that is not an object)."""
    shapes = result_shapes().get(method) if isinstance(method, str) else None
    if shapes is None or not isinstance(result, dict):
        return None
    keys = set(result)
    return any(req <= keys and (props is None or keys <= props) for req, props in shapes)


def method_sender(method: str) -> str | None:
    """`client` or `agent` when only that side sends `method`, else None."""
    if method in AGENT_SENT or method.startswith(AGENT_PREFIXES):
        return "agent"
    if method in CLIENT_SENT or method.startswith(CLIENT_PREFIXES):
        return "client"
    return None


@dataclass
class Directions:
    """Infers senders message by message, keeping each side's pending request ids."""

    # side -> request id -> (order sent, method)
    pending: dict[str, dict[str, tuple[int, Any]]] = field(
        default_factory=lambda: {"client": {}, "agent": {}}
    )
    order: int = 0

    def guess(self, msg: dict[str, Any]) -> Guess:
        """The sender of `msg` as the protocol decides it, or None with the reason."""
        kind = message_kind(msg)
        if kind in ("response", "error"):
            return self._response(id_text(msg["id"]), msg)
        method = msg.get("method")
        if method == CANCEL_METHOD:
            return self._cancel(msg.get("params"))
        side = method_sender(method) if isinstance(method, str) else None
        if side is not None:
            return side, None
        if isinstance(method, str) and method in EITHER_SIDE:
            return None, f"{method} is sent by both sides"
        return None, f"unknown method {method!r}"

    def fallback(self, msg: dict[str, Any]) -> str:
        """The choice made when `guess` cannot decide (documented in docs/importing.md)."""
        kind = message_kind(msg)
        if kind in ("response", "error"):
            requester = self._older(id_text(msg["id"]))
            return "agent" if requester is None else other_side(requester)
        if msg.get("method") == CANCEL_METHOD:
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            return self._older(id_text(rid)) or "client"
        return "client" if kind == "request" else "agent"

    def commit(self, msg: dict[str, Any], src: str) -> None:
        """Note `msg` as sent by `src`: a request becomes pending, a response settles one."""
        kind = message_kind(msg)
        if kind == "request":
            self.order += 1
            self.pending[src][id_text(msg["id"])] = (self.order, msg.get("method"))
        elif kind in ("response", "error"):
            self.pending[other_side(src)].pop(id_text(msg["id"]), None)

    def _holders(self, key: str) -> list[str]:
        return [side for side in ("client", "agent") if key in self.pending[side]]

    def _older(self, key: str) -> str | None:
        holders = self._holders(key)
        return min(holders, key=lambda s: self.pending[s][key][0]) if holders else None

    def _response(self, key: str, msg: dict[str, Any]) -> Guess:
        holders = self._holders(key)
        if len(holders) == 1:
            return other_side(holders[0]), None
        if not holders:
            return None, f"response id {key} matches no pending request"
        methods = {side: self.pending[side][key][1] for side in holders}
        if "result" not in msg:
            return None, (
                f"response id {key} is pending on both sides ({_both(methods)}) and an error "
                "has no shape that tells which it answers"
            )
        fits = {side: result_fits(methods[side], msg["result"]) for side in holders}
        possible = [side for side in holders if fits[side] is not False]
        if len(possible) == 1:
            return other_side(possible[0]), None
        how = "fits both" if possible else "fits neither"
        return (
            None,
            f"response id {key} is pending on both sides ({_both(methods)}); its result {how}",
        )

    def _cancel(self, params: Any) -> Guess:
        if not isinstance(params, dict) or "requestId" not in params:
            return None, f"{CANCEL_METHOD} without requestId"
        rid = id_text(params["requestId"])
        holders = self._holders(rid)
        if len(holders) == 1:
            return holders[0], None
        where = "on both sides" if holders else "on neither side"
        return None, f"{CANCEL_METHOD} names request {rid}, pending {where}"


def _both(methods: dict[str, Any]) -> str:
    return f"the client's {methods['client']}, the agent's {methods['agent']}"


def decide(directions: Directions, msgs: list[dict[str, Any]]) -> tuple[str, str | None]:
    """The sender of one line (a message or a batch) and why it was ambiguous, if it was."""
    guesses = [directions.guess(m) for m in msgs]
    sides = {side for side, _ in guesses if side is not None}
    if len(sides) == 1 and all(side is not None for side, _ in guesses):
        return sides.pop(), None
    if len(sides) == 1:
        return sides.pop(), "; ".join(r for _, r in guesses if r)
    if sides:
        first = next(side for side, _ in guesses if side is not None)
        return first, "a batch mixes messages of both sides"
    return directions.fallback(msgs[0]), "; ".join(r for _, r in guesses if r)


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """The messages of one entry: a message, or a non-empty batch of messages."""
    if is_message(value):
        return [value]
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return value
    return None


def _entries(text: str) -> tuple[list[tuple[int, str | None, Any]], int | None]:
    """(line, text or None, value) per entry, and the line where an array document breaks.

    A document that is one JSON array is a list of messages; otherwise each top-level value
    (one per line in NDJSON) is an entry, and an array among them is a batch. Values spread
    over several lines (pretty-printed) are read when a line opens one.
    """
    head = text.lstrip()
    if head.startswith("["):
        entries, broken = parse_array(text)
        if broken is None or not _is_json(head.split("\n", 1)[0]):
            return [(line, None, value) for line, value in entries], broken
    lines: list[tuple[int, str | None, Any]] = list(ndjson_raw(text))
    if any(isinstance(v, Unparsed) and v.text.rstrip().endswith(("{", "[")) for *_, v in lines):
        return list(parse_stream(text)), None
    return lines, None


def _is_json(line: str) -> bool:
    try:
        loads(line.encode("utf-8", errors="surrogateescape"))
    except ValueError:
        return False
    return True


Own = Callable[[Any], bool]  # a capture tool's own output line (not a message of the wire)


def convert(
    path: Path, text: str, name: str = "jsonrpc", own: Own | None = None
) -> list[TraceBuilder]:
    """Convert a bare JSON-RPC capture into one ordering-only trace.

    `own` tells the lines a capturing tool wrote about itself (acpx's status and error
    reports): they are kept in the header's `tool_output` with their line, not as records.
    """
    builder = TraceBuilder(
        str(path),
        {
            "imported_from": name,
            "source": str(path),
            "timing": "ordering-only",
            "dropped": None,
        },
    )
    directions, ambiguous, tool_output = Directions(), [], []
    entries, broken = _entries(text)
    for line, raw, value in entries:
        if own is not None and own(value):
            tool_output.append({"line": line, "value": value})
            continue
        msgs = _messages(value)
        if msgs is None:
            what = "not JSON" if isinstance(value, Unparsed) else "not a JSON-RPC 2.0 message"
            builder.unconvertible(line, what)
            continue
        src, reason = decide(directions, msgs)
        payload = message_payload(raw, True) if raw is not None else b'"msg":' + dumps(value)
        seq = builder.record(None, src, payload)
        for msg in msgs:
            directions.commit(msg, src)
        if reason:
            ambiguous.append({"line": line, "seq": seq, "reason": reason})
    if broken is not None:
        builder.unconvertible(broken, "the JSON array is damaged from here on")
    builder.header["ambiguous"] = ambiguous
    if own is not None:
        builder.header["tool_output"] = tool_output
    return [builder]
