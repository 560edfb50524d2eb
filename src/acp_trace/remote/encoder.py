"""The remote recorder's writer process: frames from the proxy (messages and events, each with
the stamp the proxy took) into trace format v1, in the order they came, `seq` assigned here,
the recorded copy redacted through redaction/ (docs/trace-format.md, "Remote recordings").

A frame is `<II` (the lengths of its head and its data), the head (JSON: `[kind, t_ns, name,
fields, key]`), then the data (a message's bytes). Kinds: `m` a message (name: its src,
fields: where it travelled), `e` an event (name: the event), `d` messages dropped from a full
queue (fields: {src: count}), `f` the end (fields: the exit event's fields and the proxy's
counts per connection). `key` names the ACP connection (`Recording`: one trace each).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_trace.jsonrpc import json_bytes
from acp_trace.redaction.redactor import Redactor
from acp_trace.trace.format import encode_event, encode_record

__all__ = ["HEAD", "Encoder", "Recording", "frame", "read_frames"]

HEAD = struct.Struct("<II")
SOURCES = ("client", "agent")


def frame(
    kind: str, t_ns: int, name: str, fields: Any, data: bytes = b"", key: str | None = None
) -> bytes:
    head = orjson.dumps([kind, t_ns, name, fields, key])
    return HEAD.pack(len(head), len(data)) + head + data


def read_frames(fd: int) -> Any:
    """The frames on `fd` until EOF: (kind, t_ns, name, fields, key, data)."""
    buffer = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        buffer += chunk
        start = 0
        while len(buffer) - start >= HEAD.size:
            head_len, data_len = HEAD.unpack_from(buffer, start)
            end = start + HEAD.size + head_len + data_len
            if len(buffer) < end:
                break
            head = orjson.loads(buffer[start + HEAD.size : start + HEAD.size + head_len])
            yield (*head, buffer[end - data_len : end])
            start = end
        buffer = buffer[start:]


@dataclass
class Encoder:
    """One trace, written on `fd`."""

    fd: int
    path: str
    redactor: Redactor
    max_record_bytes: int
    recorded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    unwritten: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    write_error: str | None = None
    records: int = 0
    _seq: int = 0
    _last_t: int = 0

    def take(self, kind: str, t_ns: int, name: str, fields: Any, data: bytes) -> None:
        """One frame of this trace's connection (not the end)."""
        if kind == "m":
            self._message(t_ns, name, data, fields)
        elif kind == "e":
            self._record(t_ns, "tap", encode_event(name, **fields))
        elif kind == "d":
            for src, count in fields.items():
                event = encode_event("dropped", count=count, stream=src)
                self._record(max(t_ns, self._last_t), "tap", event)

    def died(self) -> None:
        """The proxy died before it closed the recording."""
        message = "the recorder ended before it closed the recording"
        self._record(self._last_t, "tap", encode_event("error", message=message, cause="recorder"))

    def result(self) -> dict[str, Any]:
        return {"path": self.path, "records": self.records, "write_error": self.write_error}

    def _message(self, t_ns: int, src: str, data: bytes, where: dict[str, Any]) -> None:
        if self.write_error is not None:
            self.unwritten[src] += 1
            return
        payload = self.redactor.line_payload(one_line(data), src, self.max_record_bytes)
        prefix = json_bytes(where)[1:-1] + b"," if where else b""
        if self._record(t_ns, src, prefix + payload):
            self.recorded[src] += 1
        else:
            self.unwritten[src] += 1

    def end(self, t_ns: int, exit_fields: dict[str, Any], counts: dict[str, Any]) -> None:
        """`exit`, then the `account` with the proxy's counts of this connection."""
        self._record(t_ns, "tap", encode_event("exit", **exit_fields))
        streams = {
            src: {
                "lines": seen["lines"],
                "recorded": self.recorded[src],
                "dropped": seen["dropped"],
                "unwritten": self.unwritten[src],
                "bytes": seen["bytes"],
            }
            for src, seen in counts.items()
        }
        self._record(self._last_t, "tap", encode_event("account", streams=streams, by="writer"))

    def _record(self, t_ns: int, src: str, payload: bytes) -> bool:
        if self.write_error is not None:
            return False
        self._seq += 1
        self._last_t = max(self._last_t, t_ns)  # never back in seq order
        ok = self.write(encode_record(self._seq, self._last_t, src, payload))
        self.records += ok
        return ok

    def write(self, data: bytes) -> bool:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.write_error = f"cannot write the trace {self.path} ({exc.strerror})"
            return False
        return True


def one_line(data: bytes) -> bytes:
    """A body, SSE event or frame as one line for the record: a JSON value spread over lines
    (pretty-printed, or an SSE event's several `data:` lines) has its line breaks, which can
    only be whitespace between tokens, made spaces; anything else is kept as it is (text)."""
    if b"\n" not in data and b"\r" not in data:
        return data
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return data
    return data.replace(b"\r", b" ").replace(b"\n", b" ")


@dataclass
class Recording:
    """The traces of one recording, one per ACP connection: the first connection (and what
    belongs to none: a request refused before it had one) in the first trace, each later one
    in a trace that `open_more(n)` opens (None: everything in the first)."""

    first: Encoder
    header: bytes
    open_more: Callable[[int], Encoder | None]
    traces: dict[str | None, Encoder] = field(default_factory=dict)
    _owner: str | None = None

    def run(self, frames: Any) -> dict[str, Any]:
        """Encode every frame until the end frame (or EOF); the result the proxy reads back."""
        for kind, t_ns, name, fields, key, data in frames:
            if kind == "f":
                self._end(t_ns, fields)
                return self._result()
            self._trace(key).take(kind, t_ns, name, fields, data)
        for encoder in self._all().values():
            encoder.died()
        return self._result()

    def _trace(self, key: str | None) -> Encoder:
        if key is None or key == self._owner:
            return self.first
        if self._owner is None:
            self._owner = key
            return self.first
        if key not in self.traces:
            more = self.open_more(len(self.traces) + 2)
            if more is None:
                return self.first
            more.write(self.header)
            self.traces[key] = more
        return self.traces[key]

    def _end(self, t_ns: int, fields: dict[str, Any]) -> None:
        """Each trace's `exit` and `account`, with the counts of every connection it holds."""
        summed: dict[int, dict[str, dict[str, int]]] = {}
        for key, counts in fields["counts"].items():
            encoder = self._trace(None if key == "None" else key)
            into = summed.setdefault(id(encoder), {s: dict.fromkeys(_NONE[s], 0) for s in SOURCES})
            for src, seen in counts.items():
                for name, value in seen.items():
                    into[src][name] += value
        for encoder in self._all().values():
            encoder.end(t_ns, fields["exit"], summed.get(id(encoder), _NONE))

    def _all(self) -> dict[str | None, Encoder]:
        return {self._owner: self.first, **self.traces}

    def _result(self) -> dict[str, Any]:
        encoders = list(self._all().values())
        return {
            "traces": [e.result() for e in encoders],
            "recorded": {s: sum(e.recorded[s] for e in encoders) for s in SOURCES},
            "unwritten": {s: sum(e.unwritten[s] for e in encoders) for s in SOURCES},
        }


_NONE = {src: {"lines": 0, "dropped": 0, "bytes": 0} for src in SOURCES}
