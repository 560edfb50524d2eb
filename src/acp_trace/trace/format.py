"""The bytes of trace format v1 (docs/trace-format.md): encoding the header, records and tap
events for the writer, finding a record's `msg` text exactly as it was written, and reading
the header fields whose type a hand-written header may get wrong (`header_items`,
`header_timing`, `started_at`: a wrong type reads as absent)."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from typing import Any

import orjson

from acp_trace.jsonrpc import json_bytes, json_text, loads

FORMAT_VERSION = 1
SOURCES = ("client", "agent", "stderr", "tap")


def utc_now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with microseconds, e.g. 2026-11-30T10:11:06.123456Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def header_items(head: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects of a header's list field (`ambiguous`, `error_code_unknown`): none when
    the field is missing or not a list, and only the items that are objects."""
    value = head.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def header_timing(head: dict[str, Any]) -> str:
    """A header's `timing` (`tap`, `source`, `ordering-only`); the format's default, `tap`,
    when it is missing or not a string."""
    timing = head.get("timing")
    return timing if isinstance(timing, str) else "tap"


def started_at(value: Any) -> datetime | None:
    """A header's `started_at` as an aware UTC datetime; None when it is not an RFC 3339
    time that UTC can hold (a string of another form, a year 1 with an offset east of UTC)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def encode_header(fields: dict[str, Any]) -> bytes:
    """The header line (with newline): `acp_trace` and `kind` first, then `fields`."""
    head = {"acp_trace": FORMAT_VERSION, "kind": "header", **fields}
    return json_text(head).encode() + b"\n"  # an importer's fields may hold huge integers


def encode_payload(line: bytes, max_bytes: int | None = None, size: int | None = None) -> bytes:
    """The payload part of a record for one line read from a stream (without its `\\n`).

    Returns the bytes that follow `"src":"...",` : `"msg":<the original bytes>` when the line
    is JSON, `"text":...` when it is UTF-8 text, `"b64":...` otherwise. With `max_bytes`, a
    longer line is recorded cut, as text or b64, with `"truncated":true,"bytes":N`; `size` is
    N when `line` holds only the first bytes of a longer line (the recorder keeps no more).
    """
    if max_bytes is not None and len(line) > max_bytes:
        cut = line[:max_bytes]
        try:
            body = b'"text":' + orjson.dumps(cut.decode("utf-8"))
        except UnicodeDecodeError:
            body = b'"b64":' + orjson.dumps(base64.b64encode(cut).decode())
        real = len(line) if size is None else size
        return body + b',"truncated":true,"bytes":' + str(real).encode()
    stripped = line.strip(b" \t\r")
    if stripped:
        try:
            loads(stripped)
        except ValueError:
            pass
        else:
            return b'"msg":' + stripped
    return encode_text(line)


def encode_text(line: bytes) -> bytes:
    """`"text":...` for a UTF-8 line, `"b64":...` for any other bytes."""
    try:
        return b'"text":' + orjson.dumps(line.decode("utf-8"))
    except UnicodeDecodeError:
        return b'"b64":' + orjson.dumps(base64.b64encode(line).decode())


def encode_record(seq: int, t_ns: int, src: str, payload: bytes) -> bytes:
    """A record line (with newline) around a payload from `encode_payload` or `encode_event`."""
    return b'{"seq":%d,"t_ns":%d,"src":"%s",%s}\n' % (seq, t_ns, src.encode(), payload)


def encode_event(event: str, **fields: Any) -> bytes:
    """The payload of a tap event: `"event":"exit","code":0,...`."""
    return json_bytes({"event": event, **fields})[1:-1]


# ---------------------------------------------------------------- reading msg text


def msg_text(line: bytes, rec: dict[str, Any]) -> tuple[str, int]:
    """The `msg` value's text exactly as it stands in the record line, and its UTF-8 size.

    The writer puts `msg` last, so it ends at the record's closing brace; a record written by
    hand may put it anywhere, and then its value is scanned for where it ends.
    """
    start = line.find(b'"msg"')
    colon = line.find(b":", start + 5) if start >= 0 else -1
    if colon >= 0:
        if next(reversed(rec)) == "msg":
            end = line.rstrip().rfind(b"}")
        else:
            end = _value_end(line, _skip_space(line, colon + 1))
        data = line[colon + 1 : end].strip()
        if data:
            return data.decode("utf-8"), len(data)
    text = json_text(rec["msg"])
    return text, len(text.encode())


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_SPACE = b" \t\r\n"


def _skip_space(text: bytes, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _value_end(text: bytes, i: int) -> int:
    """The index just past the JSON value that starts at `i` (strings are jumped whole)."""
    depth = 0
    while i < len(text):
        char = text[i : i + 1]
        if char == b'"':
            match = _STRING.match(text, i)
            i = match.end() if match else len(text)
            if depth == 0:
                return i
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            if depth == 0:
                return i
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and (char == b"," or char in (b" ", b"\t", b"\r", b"\n")):
            return i
        i += 1
    return i


def element_spans(array: bytes) -> list[bytes]:
    """The text of each element of a JSON array, as written."""
    spans: list[bytes] = []
    i = _skip_space(array, 1)
    while i < len(array) and array[i : i + 1] != b"]":
        end = _value_end(array, i)
        spans.append(array[i:end])
        i = _skip_space(array, end)
        if array[i : i + 1] == b",":
            i = _skip_space(array, i + 1)
    return spans
