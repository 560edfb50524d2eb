"""The proxy's side of the trace: what the proxy saw (messages and events, each with its
stamp) queued in the order seen, and handed by a sender thread down a pipe to the writer
process (encoder.py), which redacts and writes (docs/trace-format.md, "Remote recordings").

The event loop only counts and queues: no encoding, no redaction, no disk, and no wait on
the writer. What waits is bounded by `queue_bytes`: past it a message is dropped from the
record (never from the traffic), counted in a `dropped` event and in the `account`. The
writer process is forked before the proxy starts (no thread, no loop yet); it ignores the
terminal's signals (Ctrl-C must not cut the trace) and ends the trace with `exit` and
`account` when the proxy says so, or with an `error` (cause `recorder`) when the proxy died.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_trace.record.trace_file import TraceTarget
from acp_trace.redaction.redactor import Redactor
from acp_trace.remote.encoder import Encoder, Recording, frame, read_frames
from acp_trace.trace.format import encode_header

__all__ = ["RemoteWriter", "Tally"]

SOURCES = ("client", "agent")
Item = tuple[str, int, str, Any, bytes]  # kind, t_ns, name, fields, data (encoder.frame's)
Key = str | None  # the ACP connection (None: the recording's first trace)


@dataclass
class Tally:
    """One direction's account: messages seen (`lines`, the `account` event's name for them),
    recorded, dropped (a full queue), unwritten (the trace could not take them), bytes."""

    lines: int = 0
    recorded: int = 0
    dropped: int = 0
    unwritten: int = 0
    bytes: int = 0


@dataclass
class RemoteWriter:
    """Start with `start(header)`, feed with `message` and `event` from the proxy's loop, end
    with `finish(t_ns, exit_fields)`."""

    target: TraceTarget
    redactor: Redactor
    max_record_bytes: int
    queue_bytes: int
    # a later connection's trace (n = 2, 3, ...), opened in the writer process; None: one trace
    open_more: Callable[[int], TraceTarget | None] = lambda _n: None
    tallies: dict[str, Tally] = field(default_factory=lambda: {s: Tally() for s in SOURCES})
    by_key: dict[Key, dict[str, Tally]] = field(default_factory=dict)
    traces: list[str] = field(default_factory=list)
    write_error: str | None = None
    records: int = 0
    _queue: queue.SimpleQueue[tuple[Item, Key] | None] = field(default_factory=queue.SimpleQueue)
    _waiting: int = 0  # bytes queued and not yet sent to the writer process
    _dropped: dict[Key, dict[str, int]] = field(default_factory=dict)  # not yet told by an event
    _keys: dict[int, Key] = field(default_factory=dict)  # exchange -> its connection
    _held: dict[int, list[Item]] = field(default_factory=dict)  # exchanges of no known one yet
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _pipe: int = -1
    _result: int = -1
    _pid: int = 0

    def start(self, header: dict[str, Any]) -> None:
        """Write the header, fork the writer process, start the sender thread."""
        fd = self.target.fd if self.target.fd is not None else self.target.open_later()
        encoder = Encoder(fd, self.target.path, self.redactor, self.max_record_bytes)
        head = encode_header(header)
        encoder.write(head)
        recording = Recording(encoder, head, self._more)
        data_r, data_w = os.pipe()
        result_r, result_w = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the writer process
            _writer_main(recording, data_r, result_w)
        os.close(data_r)
        os.close(result_w)
        if self.target.fd is None:
            os.close(fd)
        self._pipe, self._result = data_w, result_r
        self._thread = threading.Thread(target=self._send, name="acp-trace-sender", daemon=True)
        self._thread.start()

    def hold(self, exchange: int) -> None:
        """What `exchange` carries waits until `bind` says its connection (an initialize POST
        learns it from the answer, a WebSocket from its 101)."""
        self._held[exchange] = []

    def bind(self, exchange: int, key: Key) -> None:
        """`exchange` belongs to connection `key` (None: to none, the first trace)."""
        self._keys[exchange] = key
        for item in self._held.pop(exchange, []):
            self._admit(item, key)

    def message(self, t_ns: int, src: str, data: bytes, where: dict[str, Any]) -> None:
        """A JSON-RPC message (or whatever a body, event or frame held) seen at `t_ns`."""
        self._enqueue(("m", t_ns, src, where, data), where.get("exchange"))

    def event(self, t_ns: int, name: str, **fields: Any) -> None:
        """A proxy event (`src: tap`): opens, statuses, ends, reconnects, WebSocket codes."""
        self._enqueue(("e", t_ns, name, fields, b""), fields.get("exchange"))

    def _enqueue(self, item: Item, exchange: int | None) -> None:
        if exchange is not None and exchange in self._held:
            self._held[exchange].append(item)
        else:
            self._admit(item, self._keys.get(exchange) if exchange is not None else None)

    def _admit(self, item: Item, key: Key) -> None:
        if item[0] == "m":
            src, data = item[2], item[4]
            tallies = self.by_key.setdefault(key, {s: Tally() for s in SOURCES})
            for tally in (self.tallies[src], tallies[src]):
                tally.lines += 1
                tally.bytes += len(data)
            with self._lock:
                if self._waiting + len(data) > self.queue_bytes:
                    for tally in (self.tallies[src], tallies[src]):
                        tally.dropped += 1
                    dropped = self._dropped.setdefault(key, {})
                    dropped[src] = dropped.get(src, 0) + 1
                    return
                self._waiting += len(data)
        self._queue.put((item, key))

    def finish(self, t_ns: int, exit_fields: dict[str, Any]) -> None:
        """End each trace with `exit` and the `account`; wait for the writer process."""
        for exchange in list(self._held):  # never answered: what they hold is the first trace's
            self.bind(exchange, None)
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()
        counts = {
            str(key): {
                s: {"lines": t.lines, "dropped": t.dropped, "bytes": t.bytes}
                for s, t in tallies.items()
            }
            for key, tallies in self.by_key.items()
        }
        self._write(frame("f", t_ns, "", {"exit": exit_fields, "counts": counts}))
        os.close(self._pipe)
        result = b""
        while chunk := os.read(self._result, 65536):
            result += chunk
        os.close(self._result)
        os.waitpid(self._pid, 0)
        done = orjson.loads(result) if result else {}
        traces = done.get("traces", [])
        self.traces = [t["path"] for t in traces] or [self.target.path]
        self.records = sum(t["records"] for t in traces)
        errors = [t["write_error"] for t in traces if t["write_error"]]
        self.write_error = errors[0] if errors else None
        if not done:
            self.write_error = "the writer process ended without a word"
        for src, tally in self.tallies.items():
            tally.recorded = done.get("recorded", {}).get(src, 0)
            tally.unwritten = done.get("unwritten", {}).get(src, tally.lines - tally.dropped)

    # ------------------------------------------------------------ the sender thread

    def _send(self) -> None:
        while (queued := self._queue.get()) is not None:
            item, key = queued
            with self._lock:
                dropped, self._dropped = self._dropped, {}
                if item[0] == "m":
                    self._waiting -= len(item[4])
            for where, counts in dropped.items():
                self._write(frame("d", item[1], "", counts, key=where))
            self._write(frame(*item, key=key))
        with self._lock:
            dropped, self._dropped = self._dropped, {}
        for where, counts in dropped.items():
            self._write(frame("d", 0, "", counts, key=where))

    def _more(self, n: int) -> Encoder | None:
        """(In the writer process) the trace of the recording's n-th connection."""
        target = self.open_more(n)
        if target is None or target.fd is None:
            return None
        redactor = Redactor(self.redactor.policy)  # requests pair within a connection
        return Encoder(target.fd, target.path, redactor, self.max_record_bytes)

    def _write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._pipe, view) :]
        except OSError:  # the writer process is gone: finish() says so
            pass


def _writer_main(recording: Recording, data: int, result: int) -> None:
    """The writer process: encode until the end, report, exit (never returns)."""
    code = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        keep = {0, 1, 2, recording.first.fd, data, result}
        for name in os.listdir("/proc/self/fd"):  # the proxy's: its listening socket above all
            if int(name) not in keep:
                with suppress(OSError):
                    os.close(int(name))
        done = recording.run(read_frames(data))
        os.write(result, orjson.dumps(done))
    except BaseException:  # a writer process must never return into the proxy
        code = 1
    finally:
        os._exit(code)
