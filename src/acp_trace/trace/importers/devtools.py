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
- the default export replaces auth headers and proxy tokens with `<REDACTED>` and then writes
  `raw` again as `JSON.stringify(payload)` (storage/redact.ts): kept as such, and those
  records' seqs listed in the header's `export_redacted` (their bytes are not the wire's);
- `session.endedAt` is when the proxy saw the agent exit (proxy.ts: `session.close()` after
  `waitForExit`): a tap `exit` event there (`code` and `signal` null: not recorded). Null when
  the proxy never finished (killed, or still capturing): no `exit`, and a warning;
- acp-devtools decodes each read chunk as UTF-8 on its own (acp/parser.ts `LineFramer.feed`):
  a character split between two reads is captured as U+FFFD; such messages are listed in
  `replacement_chars`, with a warning;
- acp-devtools numbers the frames of both directions with one counter from 1: where `seq`
  skips, a tap `dropped` event (`stream` null) and the span in `missing_seqs`;
- what the capture evidently lacks is said, never guessed: requests without a response (the
  peer did not answer, or acp-devtools lost it: it stops reading the agent at its exit) and a
  capture without an end, each a tap `error` event (`cause: "capture"`) before the end and a
  line in the header's `warnings`;
- the agent's stderr is not in an export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import as_int, as_str, json_text, loads_message
from acp_trace.trace.format import encode_event
from acp_trace.trace.importers._common import (
    TraceBuilder,
    describe,
    first_value,
    id_text,
    message_payload,
    rfc3339_ms,
)

SIDES = {"editor-to-agent": "client", "agent-to-editor": "agent"}
OTHER = {"client": "agent", "agent": "client"}
REDACTED = "<REDACTED>"  # storage/redact.ts REDACTED_PLACEHOLDER
SHOWN = 5  # unanswered requests named in a warning


def is_export(value: Any) -> bool:
    """True for an export document: version 1, a session object and a messages array."""
    return (
        isinstance(value, dict)
        and value.get("version") == 1
        and isinstance(value.get("session"), dict)
        and isinstance(value.get("messages"), list)
        and isinstance(value.get("tool"), dict)
    )


@dataclass
class _Pending:
    """What the messages read so far leave to say: each side's requests without a response,
    the messages the export redacted or that hold U+FFFD, acp-devtools' seqs missing."""

    requests: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    redacted: list[int] = field(default_factory=list)  # the records' seqs, as `replaced`
    replaced: list[int] = field(default_factory=list)  # messages holding U+FFFD
    last_seq: int = 0  # acp-devtools' seq of the message before (its counter starts at 1)
    missing: list[list[int]] = field(default_factory=list)  # [first, last] seqs absent


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert an acp-devtools session export into one trace."""
    doc = first_value(text)
    if not is_export(doc):
        raise InputError(
            f"{path}: expected an acp-devtools session export (version 1), found {describe(doc)}"
        )
    session, tool = doc["session"], doc["tool"]
    start, end = _ms(session.get("startedAt")), _ms(session.get("endedAt"))
    started = rfc3339_ms(start) if start is not None else None
    head: dict[str, Any] = {
        "imported_from": "acp-devtools",
        "source": str(path),
        "timing": "source" if started is not None else "ordering-only",
        "dropped": None,
        "not_traced": ["stderr"],
        "exported_by": f"{as_str(tool.get('name'))} {as_str(tool.get('version'))}",
        "ended_at": rfc3339_ms(end) if end is not None else None,
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
    origin = start if started is not None else None
    pending = _Pending()
    for msg in messages:
        problem = _message(builder, msg, origin, pending)
        if problem is not None:
            builder.unconvertible(as_int(msg.get("seq")) or 0, problem)
    head["export_redacted"] = pending.redacted
    head["missing_seqs"] = pending.missing
    head["replacement_chars"] = pending.replaced
    _finish(builder, pending, None if end is None or origin is None else _ns(end - origin), end)
    return [builder]


def _message(
    builder: TraceBuilder, msg: dict[str, Any], start: int | None, pending: _Pending
) -> str | None:
    direction = msg.get("direction")
    src = SIDES.get(direction) if isinstance(direction, str) else None
    if src is None:
        return f"unknown direction {json_text(direction)}"
    stamp = _ms(msg.get("timestamp"))
    t_ns = None if stamp is None or start is None else _ns(stamp - start)
    _gap(builder, as_int(msg.get("seq")), t_ns, pending)
    raw = msg.get("raw")
    if isinstance(raw, str) and raw.strip():
        seq = builder.record(t_ns, src, message_payload(raw))
        value = _parsed(raw)
    elif isinstance(msg.get("payload"), dict | list):
        seq = builder.message(t_ns, src, msg["payload"])
        value = msg["payload"]
    else:
        return "a message with neither raw text nor a payload"
    _pair(value, src, seq, pending)
    if isinstance(raw, str) and f'"{REDACTED}"' in raw and _holds(value, REDACTED):
        pending.redacted.append(seq)
    if isinstance(raw, str) and "\ufffd" in raw:
        pending.replaced.append(seq)
    return None


def _gap(builder: TraceBuilder, seq: int | None, t_ns: int | None, pending: _Pending) -> None:
    """A `dropped` event where acp-devtools' seq skips: one counter numbers every frame it
    captured in either direction, so the messages between were in the capture and are not in
    the export (an edited or trimmed file); which side sent them is unknown."""
    if seq is None or seq <= pending.last_seq:
        return
    if seq > pending.last_seq + 1:
        first, last = pending.last_seq + 1, seq - 1
        pending.missing.append([first, last])
        builder.record(t_ns, "tap", encode_event("dropped", count=last - first + 1, stream=None))
    pending.last_seq = seq


def _parsed(raw: str) -> Any:
    """The message a line holds (ids exact at any size), or None when it is not JSON."""
    try:
        return loads_message(raw)
    except ValueError:
        return None


def _pair(value: Any, src: str, seq: int, pending: _Pending) -> None:
    """Note a request as pending on its sender, or settle the other side's request."""
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict) or "id" not in item or item.get("id") is None:
            continue
        key = id_text(item["id"])
        if isinstance(item.get("method"), str):
            pending.requests.setdefault((src, key), (seq, item["method"]))
        elif "result" in item or "error" in item:
            pending.requests.pop((OTHER[src], key), None)


def _holds(value: Any, text: str) -> bool:
    """True when `text` is a string value anywhere in `value`."""
    if isinstance(value, dict):
        return any(_holds(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, text) for v in value)
    return isinstance(value, str) and value == text


def _finish(builder: TraceBuilder, pending: _Pending, end_ns: int | None, end: int | None) -> None:
    """Say what the capture evidently lacks, then end it where acp-devtools saw the agent exit."""
    warnings: list[str] = []
    if pending.missing:
        count = sum(last - first + 1 for first, last in pending.missing)
        spans = ", ".join(f"{a}" if a == b else f"{a} to {b}" for a, b in pending.missing[:SHOWN])
        more = (
            f" and {len(pending.missing) - SHOWN} more spans"
            if len(pending.missing) > SHOWN
            else ""
        )
        warnings.append(
            f"{count:,} message{'s' if count > 1 else ''} of the capture "
            f"{'are' if count > 1 else 'is'}"
            f" not in the export: acp-devtools' seq skips {spans}{more} (a `dropped` event "
            "stands at each gap)"
        )
    if pending.requests:
        listed = sorted(pending.requests.items(), key=lambda item: item[1][0])
        named = ", ".join(
            f"seq {seq} {method} (id {key}, from the {src})"
            for (src, key), (seq, method) in listed[:SHOWN]
        )
        more = f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else ""
        warnings.append(
            f"{len(listed)} request{'s' if len(listed) > 1 else ''} without a response in the "
            f"capture: {named}{more}; the peer did not answer, or acp-devtools lost the answer "
            "(it stops reading the agent when the agent exits, and a killed proxy keeps "
            "nothing after its last write)"
        )
    if pending.replaced:
        count, seqs = len(pending.replaced), ", ".join(map(str, pending.replaced[:SHOWN]))
        warnings.append(
            f"{count} message{'s' if count > 1 else ''} of the capture "
            f"{'hold' if count > 1 else 'holds'} U+FFFD (seq {seqs}"
            f"{', ...' if count > SHOWN else ''}): acp-devtools decodes each read of a stream on "
            "its own, so a character split between two reads is captured as U+FFFD while the "
            "peer got it whole; the characters there are lost (unless the peer sent U+FFFD)"
        )
    if end is None:
        warnings.append(
            "the capture has no end (session.endedAt is null): acp-devtools was killed or was "
            "still capturing when it was exported; what came after its last message is missing"
        )
    builder.header["warnings"] = warnings
    for warning in warnings:
        builder.record(end_ns, "tap", encode_event("error", message=warning, cause="capture"))
    if end is not None:
        builder.record(end_ns, "tap", encode_event("exit", code=None, signal=None))


def _ns(ms: int) -> int | None:
    """Milliseconds as nanoseconds, or None beyond what 64 bits hold."""
    return as_int(ms * 1_000_000)


def _ms(value: Any) -> int | None:
    """A JavaScript time in ms (an integer, or a float with a fraction) as integer ms, or None."""
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 2**63:
        return round(value)
    return as_int(value)
