"""The remote recorder's trace writer: a thread that takes what the proxy saw (messages and
events, each with the stamp the proxy took) in the order the proxy saw it, assigns `seq`,
redacts the recorded copy through redaction/ and writes trace format v1
(docs/trace-format.md, "Remote recordings").

The proxy only queues (no encoding, no redaction, no disk on the forwarding path). What
waits is bounded by `queue_bytes`: past it a message is dropped from the record (never from
the traffic), counted in a `dropped` event and in the `account`. A trace that cannot be
written (disk full, removed) stops taking records; they are counted as `unwritten`.
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_trace.jsonrpc import json_bytes
from acp_trace.record.trace_file import TraceTarget
from acp_trace.redaction.redactor import Redactor
from acp_trace.trace.format import encode_event, encode_header, encode_record

__all__ = ["RemoteWriter", "Tally"]

SOURCES = ("client", "agent")


@dataclass
class Tally:
    """One direction's account: messages seen (`lines`, the `account` event's name for them),
    recorded, dropped (a full queue), unwritten (the trace could not take them), bytes."""

    lines: int = 0
    recorded: int = 0
    dropped: int = 0
    unwritten: int = 0
    bytes: int = 0

    def fields(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("lines", "recorded", "dropped", "unwritten", "bytes")}


@dataclass
class _Message:
    t_ns: int
    src: str
    data: bytes
    where: dict[str, Any]


@dataclass
class _Event:
    t_ns: int
    fields: dict[str, Any]


@dataclass
class RemoteWriter:
    """Start with `start(header)`, feed with `message` and `event` from the proxy's thread,
    end with `finish(exit_fields)`: the trace then ends with `exit` and `account`."""

    target: TraceTarget
    redactor: Redactor
    max_record_bytes: int
    queue_bytes: int
    tallies: dict[str, Tally] = field(default_factory=lambda: {s: Tally() for s in SOURCES})
    write_error: str | None = None
    records: int = 0
    _queue: queue.SimpleQueue[_Message | _Event | None] = field(default_factory=queue.SimpleQueue)
    _waiting: int = 0  # bytes queued and not yet encoded
    _dropped: dict[str, int] = field(default_factory=dict)  # not yet told by an event
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _fd: int | None = None
    _seq: int = 0
    _last_t: int = 0

    def start(self, header: dict[str, Any]) -> None:
        """Write the header and start the thread."""
        self._fd = self.target.fd if self.target.fd is not None else self.target.open_later()
        self._write(encode_header(header))
        self._thread = threading.Thread(target=self._run, name="acp-trace-writer", daemon=True)
        self._thread.start()

    def message(self, t_ns: int, src: str, data: bytes, where: dict[str, Any]) -> None:
        """A JSON-RPC message (or whatever a body, event or frame held) seen at `t_ns`."""
        tally = self.tallies[src]
        tally.lines += 1
        tally.bytes += len(data)
        with self._lock:
            if self._waiting + len(data) > self.queue_bytes:
                tally.dropped += 1
                self._dropped[src] = self._dropped.get(src, 0) + 1
                return
            self._waiting += len(data)
        self._queue.put(_Message(t_ns, src, data, where))

    def event(self, t_ns: int, name: str, **fields: Any) -> None:
        """A proxy event (`src: tap`): opens, statuses, closes, reconnects, WebSocket codes."""
        self._queue.put(_Event(t_ns, {"event": name, **fields}))

    def finish(self, t_ns: int, exit_fields: dict[str, Any]) -> None:
        """End the trace with `exit` and the `account`, and wait for the thread."""
        self.event(t_ns, "exit", **exit_fields)
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()
        account = {"streams": {s: t.fields() for s, t in self.tallies.items()}, "by": "writer"}
        self._record(self._last_t, "tap", encode_event("account", **account))
        if self._fd is not None and self.target.fd is None:
            os.close(self._fd)

    # ------------------------------------------------------------ the thread

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            self._told_drops(item.t_ns)
            if isinstance(item, _Event):
                self._record(item.t_ns, "tap", encode_event(**item.fields))
                continue
            with self._lock:
                self._waiting -= len(item.data)
            tally = self.tallies[item.src]
            if self.write_error is not None:
                tally.unwritten += 1
                continue
            payload = self.redactor.line_payload(
                _one_line(item.data), item.src, self.max_record_bytes
            )
            where = json_bytes(item.where)[1:-1] + b"," if item.where else b""
            if self._record(item.t_ns, item.src, where + payload):
                tally.recorded += 1
            else:
                tally.unwritten += 1

    def _told_drops(self, t_ns: int) -> None:
        with self._lock:
            dropped, self._dropped = self._dropped, {}
        for src, count in dropped.items():
            self._record(
                max(t_ns, self._last_t), "tap", encode_event("dropped", count=count, stream=src)
            )

    def _record(self, t_ns: int, src: str, payload: bytes) -> bool:
        if self.write_error is not None:
            return False
        self._seq += 1
        self._last_t = max(self._last_t, t_ns)  # never back in seq order
        ok = self._write(encode_record(self._seq, self._last_t, src, payload))
        self.records += ok
        return ok

    def _write(self, data: bytes) -> bool:
        assert self._fd is not None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self.write_error = f"cannot write the trace {self.target.path} ({exc.strerror})"
            return False
        return True


def _one_line(data: bytes) -> bytes:
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
