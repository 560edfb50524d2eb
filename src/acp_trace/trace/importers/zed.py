"""Zed's ACP log panel ("dev: open acp logs", "Copy All Messages"): a pretty JSON array.

Each entry is `{"_direction", "_type", "id", "method", "params"}` (zed crates/acp_tools).
Zed is the client: `outgoing` went to the agent's stdin, `incoming` came from its stdout,
`stderr` is a line of the agent's stderr. A response's `params` holds its result, or the
error object when it failed. No timestamps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import json_bytes, json_text, other_side
from acp_trace.trace.importers._common import (
    TraceBuilder,
    describe,
    first_value,
    id_text,
    parse_array,
)

SIDES = {"outgoing": "client", "incoming": "agent", "stderr": "stderr"}
TYPES = ("request", "response", "notification")


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert a Zed ACP log copy into one ordering-only trace."""
    entries, broken = parse_array(text)
    if not entries and broken is not None:
        found = describe(first_value(text))
        raise InputError(f"{path}: expected Zed's ACP log (a JSON array of entries), found {found}")
    builder = TraceBuilder(
        str(path),
        {"imported_from": "zed", "source": str(path), "timing": "ordering-only", "dropped": None},
    )
    pending: dict[str, dict[str, str]] = {"client": {}, "agent": {}}
    for line, entry in entries:
        problem = _convert_entry(builder, entry, pending)
        if problem is not None:
            builder.unconvertible(line, problem)
    if broken is not None:
        builder.unconvertible(broken, "the JSON array is damaged from here on")
    return [builder]


def _convert_entry(
    builder: TraceBuilder, entry: Any, pending: dict[str, dict[str, str]]
) -> str | None:
    """Append the record for one entry; returns why it cannot be converted, or None."""
    if not isinstance(entry, dict):
        return f"an entry is {describe(entry)}, not an object"
    direction = entry.get("_direction")
    src = SIDES.get(direction) if isinstance(direction, str) else None
    if src is None:
        return f"unknown _direction {direction!r}"
    if src == "stderr":
        line = entry.get("params")
        text = line if isinstance(line, str) else json_text(line)
        builder.record(None, "stderr", b'"text":' + json_bytes(text))
        return None
    kind = entry.get("_type")
    if kind not in TYPES:
        kind = _infer_type(entry, src, pending)
    msg = _message(entry, kind, src, pending)
    if isinstance(msg, str):
        return msg
    builder.message(None, src, msg)
    return None


def _infer_type(entry: dict[str, Any], src: str, pending: dict[str, dict[str, str]]) -> str:
    """The entry's type when `_type` does not say (one Zed build wrote "asdf")."""
    if entry.get("id") is None:
        return "notification"
    if pending[other_side(src)].get(id_text(entry["id"])) == entry.get("method"):
        return "response"
    return "request"


def _message(
    entry: dict[str, Any], kind: str, src: str, pending: dict[str, dict[str, str]]
) -> dict[str, Any] | str:
    """The JSON-RPC message an entry stands for, or why there is none."""
    method, params, rid = entry.get("method"), entry.get("params"), entry.get("id")
    if kind == "response":
        if "id" not in entry:
            return "a response without id"
        pending[other_side(src)].pop(id_text(rid), None)
        return {"jsonrpc": "2.0", "id": rid, **_outcome(entry)}
    if not isinstance(method, str):
        return f"a {kind} without method"
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind == "request":
        if rid is None:
            return "a request without id"
        msg["id"] = rid
        pending[src][id_text(rid)] = method
    msg["method"] = method
    if params is not None:
        msg["params"] = params
    return msg


def _outcome(entry: dict[str, Any]) -> dict[str, Any]:
    """`{"result": ...}` or `{"error": ...}` for a response entry."""
    if "error" in entry and entry["error"] is not None:
        return {"error": entry["error"]}
    if "result" in entry:
        return {"result": entry["result"]}
    params = entry.get("params")
    return {"error": params} if _is_error(params) else {"result": params}


def _is_error(value: Any) -> bool:
    """True for an object shaped like a JSON-RPC error: integer `code`, string `message`."""
    return (
        isinstance(value, dict)
        and set(value) <= {"code", "message", "data"}
        and isinstance(value.get("code"), int)
        and not isinstance(value.get("code"), bool)
        and isinstance(value.get("message"), str)
    )
