"""Shared pieces of the importers: building v1 lines, and reading JSON with source line numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from acp_trace import __version__
from acp_trace.jsonrpc import clean_text, json_bytes, loads
from acp_trace.trace.format import encode_event, encode_header, encode_payload, encode_record

RECORDER = f"acp-trace {__version__} import"
Entry = tuple[int, Any]  # (line number in the source, parsed JSON value)
_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class Unparsed:
    """Stands for a stretch of the source that is not JSON: `text` is that stretch."""

    def __init__(self, text: str) -> None:
        self.text = text


def dumps(value: Any) -> bytes:
    """Compact JSON of a value from a capture (`jsonrpc.json_bytes`: huge integers exact, lone
    surrogates escaped, never `Infinity`)."""
    return json_bytes(value)


def message_payload(raw: str, parsed: bool = False) -> bytes:
    """The payload of a record for one message's text, verbatim unless it spans several lines.

    `parsed` says `raw` is known to be JSON already (it is then not parsed again).
    """
    try:
        data = raw.encode("utf-8", errors="surrogateescape")  # the source's bytes, as read
    except UnicodeEncodeError:  # a lone surrogate a JSON source held as text: its escape
        data = clean_text(raw).encode("utf-8", errors="surrogateescape")
    if b"\n" in data or b"\r" in data:
        try:
            return b'"msg":' + dumps(loads(data))
        except ValueError:
            return b'"text":' + orjson.dumps(raw.encode("utf-8", "replace").decode())
    if parsed:
        return b'"msg":' + data.strip(b" \t")
    return encode_payload(data)


def rfc3339_ms(ms: int) -> str | None:
    """Milliseconds since the epoch as RFC 3339 UTC (like the tap's `started_at`), or None."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OverflowError, OSError, ValueError):
        return None


@dataclass
class TraceBuilder:
    """The v1 lines of one converted trace, built record by record."""

    name: str
    header: dict[str, Any]
    lines: list[bytes] = field(default_factory=list)
    seq: int = 1
    converted: int = 0
    unconverted: int = 0
    first_problem: str | None = None

    def record(self, t_ns: int | None, src: str, payload: bytes) -> int:
        """Append a record; returns its seq."""
        seq = self.seq
        self.seq += 1
        if t_ns is None:
            line = b'{"seq":%d,"t_ns":null,"src":"%s",%s}\n' % (seq, src.encode(), payload)
        else:
            line = encode_record(seq, t_ns, src, payload)
        self.lines.append(line)
        if src != "tap":
            self.converted += 1
        return seq

    def message(self, t_ns: int | None, src: str, msg: dict[str, Any]) -> int:
        """Append a record for a message rebuilt from the source's fields."""
        return self.record(t_ns, src, b'"msg":' + dumps(msg))

    def unconvertible(self, line: int, why: str) -> None:
        """Count a source line that cannot be converted and leave a tap `error` event for it."""
        self.unconverted += 1
        if self.first_problem is None:
            self.first_problem = f"line {line}: {why}"
        self.record(None, "tap", encode_event("error", message=why, source_line=line))

    def finish(self) -> tuple[str, list[bytes]]:
        """The trace's name and its lines, header first."""
        head = {**self.header, "unconverted": self.unconverted, "recorder": RECORDER}
        return self.name, [encode_header(head), *self.lines]


def id_text(value: Any) -> str:
    """A canonical text for a JSON-RPC id that keeps its type (any size of integer)."""
    return dumps(value).decode()


def line_at(text: str, pos: int) -> int:
    """The 1-based line number of a position in `text`."""
    return text.count("\n", 0, pos) + 1


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def parse_array(text: str) -> tuple[list[Entry], int | None]:
    """The elements of a JSON array document with the line each starts on.

    The second value is None when the whole document was read, else the line where it
    stops being a valid array (the elements before it are kept).
    """
    pos = _skip_ws(text, 0)
    if text[pos : pos + 1] != "[":
        return [], line_at(text, pos)
    entries: list[Entry] = []
    pos, line, last = _skip_ws(text, pos + 1), 1, 0
    while text[pos : pos + 1] != "]":
        line, last = line + text.count("\n", last, pos), pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
            return entries, line
        entries.append((line, value))
        pos = _skip_ws(text, end)
        if text[pos : pos + 1] == ",":
            pos = _skip_ws(text, pos + 1)
        elif text[pos : pos + 1] != "]":
            return entries, line_at(text, pos)
    end = _skip_ws(text, pos + 1)
    return entries, None if end == len(text) else line_at(text, end)


def parse_stream(text: str) -> Iterator[tuple[int, str, Any]]:
    """Top-level JSON values one after another (NDJSON, or pretty objects one after another).

    Yields (line, the value's text, value). A stretch that is not JSON is yielded up to the end
    of its line as an `Unparsed` value, and reading goes on at the next line.
    """
    pos, line, last = _skip_ws(text, 0), 1, 0
    while pos < len(text):
        line, last = line + text.count("\n", last, pos), pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            yield line, text[pos:end], Unparsed(text[pos:end].rstrip("\r"))
        else:
            yield line, text[pos:end], value
        pos = _skip_ws(text, end)


def ndjson_raw(text: str) -> Iterator[tuple[int, str, Any]]:
    """Each non-blank line: (number, its text, parsed value or an `Unparsed`)."""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            yield number, line, loads(line.encode("utf-8", errors="surrogateescape"))
        except ValueError:
            yield number, line, Unparsed(line)


def ndjson(text: str) -> Iterator[Entry]:
    """Each non-blank line parsed (an `Unparsed` when it is not JSON), with its number."""
    for number, _line, value in ndjson_raw(text):
        yield number, value


def first_value(text: str) -> Any:
    """The first top-level JSON value of `text` (an `Unparsed` when it is not JSON)."""
    for _line, _raw, value in parse_stream(text):
        return value
    return Unparsed("")


def describe(value: Any) -> str:
    """A short description of a JSON value for error messages."""
    if isinstance(value, Unparsed) and not value.text:
        return "an empty file"
    if isinstance(value, Unparsed):
        text = value.text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        snippet = text[:40] + ("..." if len(text) > 40 else "")
        return f"text that is not JSON ({snippet!r})"
    if isinstance(value, dict):
        keys = ", ".join(list(value)[:6]) + (", ..." if len(value) > 6 else "")
        return f"a JSON object with keys {keys}" if value else "an empty JSON object"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} elements"
    return f"a JSON {type(value).__name__}"
