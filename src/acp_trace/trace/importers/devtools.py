"""acp-devtools' session export (`acp-devtools export [ID]`, export version 1; its
packages/core/src/storage/export.ts and acp/types.ts).

One JSON document (indented by default): `{"version": 1, "exportedAt", "tool": {name, version},
"session": {id, name, agentCommand, clientName, startedAt, endedAt}, "messages": [...]}`, each
message `{seq, timestamp (Unix ms when the proxy read the line), direction:
"editor-to-agent"|"agent-to-editor", kind, method?, rpcId?, raw (the line as it was on the
wire, without its newline), payload (parsed, or null), parseError?}`.

What follows for the import (docs/importing.md):

- `editor-to-agent` is `src` client, `agent-to-editor` `src` agent; messages in `seq` order;
- `raw` is recorded as it was (a line that is not JSON as text); where `raw` is missing or
  not a string, the parsed `payload`;
- `t_ns` = (`timestamp` - `session.startedAt`) ms x 10^6 (timing `source`, millisecond
  resolution); `started_at` is `session.startedAt`;
- the default export replaces auth headers and proxy tokens with `<REDACTED>`: kept as such;
- the agent's stderr is not in an export.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import as_int, as_str, json_text
from acp_trace.trace.importers._common import (
    TraceBuilder,
    describe,
    first_value,
    message_payload,
    rfc3339_ms,
)

SIDES = {"editor-to-agent": "client", "agent-to-editor": "agent"}


def is_export(value: Any) -> bool:
    """True for an export document: version 1, a session object and a messages array."""
    return (
        isinstance(value, dict)
        and value.get("version") == 1
        and isinstance(value.get("session"), dict)
        and isinstance(value.get("messages"), list)
        and isinstance(value.get("tool"), dict)
    )


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert an acp-devtools session export into one trace."""
    doc = first_value(text)
    if not is_export(doc):
        raise InputError(
            f"{path}: expected an acp-devtools session export (version 1), found {describe(doc)}"
        )
    session, tool = doc["session"], doc["tool"]
    start = _ms(session.get("startedAt"))
    started = rfc3339_ms(start) if start is not None else None
    head: dict[str, Any] = {
        "imported_from": "acp-devtools",
        "source": str(path),
        "timing": "source" if started is not None else "ordering-only",
        "dropped": None,
        "not_traced": ["stderr"],
        "exported_by": f"{as_str(tool.get('name'))} {as_str(tool.get('version'))}",
    }
    if started is not None:
        head["started_at"] = started
    command = as_str(session.get("agentCommand"))
    if command is not None:
        head["command"] = command.split()
    builder = TraceBuilder(str(path), head)
    messages = [m for m in doc["messages"] if isinstance(m, dict)]
    messages.sort(key=lambda m: s if (s := as_int(m.get("seq"))) is not None else 0)
    for index, msg in enumerate(doc["messages"]):
        if not isinstance(msg, dict):
            builder.unconvertible(index + 1, f"messages[{index}] is {describe(msg)}")
    for msg in messages:
        problem = _message(builder, msg, start if started is not None else None)
        if problem is not None:
            builder.unconvertible(as_int(msg.get("seq")) or 0, problem)
    return [builder]


def _message(builder: TraceBuilder, msg: dict[str, Any], start: int | None) -> str | None:
    direction = msg.get("direction")
    src = SIDES.get(direction) if isinstance(direction, str) else None
    if src is None:
        return f"unknown direction {json_text(direction)}"
    stamp = _ms(msg.get("timestamp"))
    t_ns = None if stamp is None or start is None else (stamp - start) * 1_000_000
    if t_ns is not None and as_int(t_ns) is None:
        t_ns = None  # beyond 64 bits of nanoseconds: no time
    raw = msg.get("raw")
    if isinstance(raw, str) and raw.strip():
        builder.record(t_ns, src, message_payload(raw))
    elif isinstance(msg.get("payload"), dict | list):
        builder.message(t_ns, src, msg["payload"])
    else:
        return "a message with neither raw text nor a payload"
    return None


def _ms(value: Any) -> int | None:
    """A JavaScript time in ms (an integer, or a float with a fraction) as integer ms, or None."""
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 2**63:
        return round(value)
    return as_int(value)
