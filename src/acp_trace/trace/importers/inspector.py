"""ACP Inspector trace exports (sagikazarmark/acp-inspector, docs/trace-export.md).

JSONL: a header `{"type": "header", "format": "acp-inspector-trace", "version": 1, "at",
"frames", "dropped", "warning"}`, then one record per frame `{"type": "frame", "at" (ms since
the epoch), "connection", "direction", "encoding": "utf8", "frame" (the verbatim text)}`.
Each connection becomes a trace. Frames without `at` (the bridge's records) keep t_ns null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import as_int
from acp_trace.trace.importers._common import (
    TraceBuilder,
    Unparsed,
    message_payload,
    ndjson,
    rfc3339_ms,
)

FORMAT = "acp-inspector-trace"
SIDES = {"client -> agent": "client", "agent -> client": "agent"}


def is_header(value: Any) -> bool:
    """True for the export's header line."""
    return (
        isinstance(value, dict) and value.get("type") == "header" and value.get("format") == FORMAT
    )


def is_frame(value: Any) -> bool:
    """True for a frame record: a string `frame` and a `direction`."""
    return isinstance(value, dict) and isinstance(value.get("frame"), str) and "direction" in value


def _header_fields(path: Path, head: dict[str, Any] | None) -> dict[str, Any]:
    """What every converted trace's header says about the export as a whole."""
    if head is None:
        return {"dropped": None}
    if head.get("version") != 1:
        found = head.get("version")
        raise InputError(f"{path}: expected {FORMAT} version 1, found version {found!r}")
    out: dict[str, Any] = {"dropped": as_int(head.get("dropped"))}
    exported = as_int(head.get("at"))
    if exported is not None:
        out["exported_at"] = rfc3339_ms(exported)
    return out


def _connection_key(value: dict[str, Any]) -> str:
    """The connection as a trace name's suffix: a lone surrogate (half an emoji, which UTF-8
    cannot hold) as its escape, `\\ud83d`."""
    key = str(value.get("connection", ""))
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert an inspector export into one trace per connection, in order of appearance."""
    entries = list(ndjson(text))
    head = entries[0][1] if entries and is_header(entries[0][1]) else None
    body = entries[1:] if head is not None else entries
    frames = [v for _, v in body if is_frame(v)]
    stamps = [at for v in frames if (at := as_int(v.get("at"))) is not None]
    at0 = stamps[0] if stamps else None
    common = {
        "imported_from": "inspector",
        "source": str(path),
        "timing": "source" if stamps else "ordering-only",
        **({"started_at": rfc3339_ms(at0)} if at0 is not None else {}),
        **_header_fields(path, head),
    }
    connections = {_connection_key(v): v.get("connection") for v in frames} or {"": None}
    keys = list(connections)
    builders = {
        key: TraceBuilder(
            f"{path}#{key}" if len(keys) > 1 else str(path), {**common, "connection": conn}
        )
        for key, conn in connections.items()
    }
    first = builders[keys[0]]
    for line, value in body:
        problem = _frame(builders, value, at0)
        if problem is not None:
            target = builders[_connection_key(value)] if is_frame(value) else first
            target.unconvertible(line, problem)
    if head is not None and isinstance(head.get("frames"), int) and head["frames"] > len(body):
        first.header["missing_frames"] = head["frames"] - len(body)
    return list(builders.values())


def _frame(builders: dict[str, TraceBuilder], value: Any, at0: int | None) -> str | None:
    """Append the record for one frame; returns why it cannot be converted, or None."""
    if isinstance(value, Unparsed):
        return "not JSON"
    if not is_frame(value):
        return "not a frame record"
    direction = value["direction"]
    src = SIDES.get(direction) if isinstance(direction, str) else None
    if src is None:
        return f"unknown direction {value['direction']!r}"
    if value.get("encoding", "utf8") != "utf8":
        return f"unsupported encoding {value.get('encoding')!r}"
    at = as_int(value.get("at"))
    t_ns = None if at is None or at0 is None else (at - at0) * 1_000_000
    builders[_connection_key(value)].record(t_ns, src, message_payload(value["frame"]))
    return None
