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
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_trace.record.trace_file import TraceTarget
from acp_trace.redaction.redactor import Redactor
from acp_trace.remote.encoder import Encoder, frame, read_frames
from acp_trace.trace.format import encode_header

__all__ = ["RemoteWriter", "Tally"]

SOURCES = ("client", "agent")
Item = tuple[str, int, str, Any, bytes]


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
    tallies: dict[str, Tally] = field(default_factory=lambda: {s: Tally() for s in SOURCES})
    write_error: str | None = None
    records: int = 0
    _queue: queue.SimpleQueue[Item | None] = field(default_factory=queue.SimpleQueue)
    _waiting: int = 0  # bytes queued and not yet sent to the writer process
    _dropped: dict[str, int] = field(default_factory=dict)  # not yet told by an event
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _pipe: int = -1
    _result: int = -1
    _pid: int = 0

    def start(self, header: dict[str, Any]) -> None:
        """Write the header, fork the writer process, start the sender thread."""
        fd = self.target.fd if self.target.fd is not None else self.target.open_later()
        encoder = Encoder(fd, self.target.path, self.redactor, self.max_record_bytes)
        encoder.write(encode_header(header))
        data_r, data_w = os.pipe()
        result_r, result_w = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the writer process
            _writer_main(encoder, data_r, result_w)
        os.close(data_r)
        os.close(result_w)
        if self.target.fd is None:
            os.close(fd)
        self._pipe, self._result = data_w, result_r
        self._thread = threading.Thread(target=self._send, name="acp-trace-sender", daemon=True)
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
        self._queue.put(("m", t_ns, src, where, data))

    def event(self, t_ns: int, name: str, **fields: Any) -> None:
        """A proxy event (`src: tap`): opens, statuses, ends, reconnects, WebSocket codes."""
        self._queue.put(("e", t_ns, name, fields, b""))

    def finish(self, t_ns: int, exit_fields: dict[str, Any]) -> None:
        """End the trace with `exit` and the `account`; wait for the writer process."""
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()
        counts = {
            s: {"lines": t.lines, "dropped": t.dropped, "bytes": t.bytes}
            for s, t in self.tallies.items()
        }
        self._write(frame("f", t_ns, "", {"exit": exit_fields, "counts": counts}))
        os.close(self._pipe)
        result = b""
        while chunk := os.read(self._result, 65536):
            result += chunk
        os.close(self._result)
        os.waitpid(self._pid, 0)
        done = orjson.loads(result) if result else {}
        self.records = done.get("records", 0)
        self.write_error = done.get("write_error", "the writer process ended without a word")
        for src, tally in self.tallies.items():
            tally.recorded = done.get("recorded", {}).get(src, 0)
            tally.unwritten = done.get("unwritten", {}).get(src, tally.lines - tally.dropped)

    # ------------------------------------------------------------ the sender thread

    def _send(self) -> None:
        while (item := self._queue.get()) is not None:
            with self._lock:
                dropped, self._dropped = self._dropped, {}
                if item[0] == "m":
                    self._waiting -= len(item[4])
            if dropped:
                self._write(frame("d", item[1], "", dropped))
            self._write(frame(*item))
        with self._lock:
            dropped, self._dropped = self._dropped, {}
        if dropped:
            self._write(frame("d", 0, "", dropped))

    def _write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._pipe, view) :]
        except OSError:  # the writer process is gone: finish() says so
            pass


def _writer_main(encoder: Encoder, data: int, result: int) -> None:
    """The writer process: encode until the end, report, exit (never returns)."""
    code = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        keep = {0, 1, 2, encoder.fd, data, result}
        for name in os.listdir("/proc/self/fd"):  # the proxy's: its listening socket above all
            if int(name) not in keep:
                with suppress(OSError):
                    os.close(int(name))
        done = encoder.run(read_frames(data))
        os.write(result, orjson.dumps(done))
    except BaseException:  # a writer process must never return into the proxy
        code = 1
    finally:
        os._exit(code)
