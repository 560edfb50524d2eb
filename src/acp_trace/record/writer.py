"""The recording's write path: stamping lines, a queue bounded by bytes, the writer thread.

Pump threads stamp each completed line (seq and t_ns under one lock) and queue it; the writer
thread encodes queued items (redaction included) and appends them to the trace. A full queue
drops lines and counts them; a write error is reported once and the rest is discarded, so the
forwarded traffic never waits for the disk.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_trace.record.redact import Redactor, line_payload
from acp_trace.trace.format import (
    encode_event,
    encode_record,
    utc_now_rfc3339,
)

BATCH_BYTES = 4 << 20
WRITER_WAKE = 0.005  # seconds: how long a queued line may wait for the writer
RECORD_OVERHEAD = 64


@dataclass
class Item:
    """One stamped line (`data`) or tap event (`event`) on its way to the writer."""

    seq: int
    t_ns: int
    src: str
    data: bytes = b""
    event: dict[str, Any] | None = None
    eol: bool = True


class ByteQueue:
    """A FIFO bounded by the bytes it holds; the writer takes batches from it."""

    def __init__(self, limit: int) -> None:
        self._items: deque[tuple[Item, int]] = deque()
        self._size = 0
        self._limit = limit
        self._cond = threading.Condition()
        self._closed = False

    def fits(self, size: int) -> bool:
        """True when `size` more bytes stay within the bound (an empty queue takes anything)."""
        with self._cond:
            return not self._items or self._size + size <= self._limit

    def put(self, item: Item, size: int) -> None:
        """Queue an item. The writer is woken only when a quarter of the bound waits; otherwise
        it finds the item within WRITER_WAKE seconds, so forwarding pays no thread wake-up."""
        with self._cond:
            if not self._closed:
                self._items.append((item, size))
                self._size += size
                if self._size >= self._limit // 4:
                    self._cond.notify()

    def take(self, max_bytes: int) -> list[Item] | None:
        """The next batch (at least one item); None once closed and empty."""
        with self._cond:
            while not self._items and not self._closed:
                self._cond.wait(WRITER_WAKE)
            batch: list[Item] = []
            taken = 0
            while self._items and (not batch or taken < max_bytes):
                item, size = self._items.popleft()
                batch.append(item)
                taken += size
            self._size -= taken
            return batch or None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Stamper:
    """Assigns seq and t_ns together under one lock, so seq order is t_ns order."""

    def __init__(self, queue: ByteQueue) -> None:
        self._lock = threading.Lock()
        self._queue = queue
        self._t0 = time.monotonic_ns()
        self.seq = 0
        self.pending_drops = 0
        self.dropped = 0

    def start(self) -> str:
        """Start the clock; the wall-clock time of t_ns 0 for the header."""
        with self._lock:
            self._t0 = time.monotonic_ns()
            return utc_now_rfc3339()

    def lines(self, src: str, lines: list[bytes], *, eol: bool = True) -> None:
        """Stamp lines completed by one read; a full queue drops them (counted)."""
        with self._lock:
            t_ns = time.monotonic_ns() - self._t0
            last = len(lines) - 1
            for index, line in enumerate(lines):
                size = len(line) + RECORD_OVERHEAD
                if not self._queue.fits(size):
                    self.pending_drops += 1
                    self.dropped += 1
                    continue
                self._flush_drops(t_ns)
                self._put(Item(0, t_ns, src, line, eol=eol or index < last), size)

    def event(self, name: str, **fields: Any) -> None:
        """Stamp a tap event (never dropped)."""
        with self._lock:
            t_ns = time.monotonic_ns() - self._t0
            self._flush_drops(t_ns)
            self._put(Item(0, t_ns, "tap", event={"event": name, **fields}), RECORD_OVERHEAD)

    def stamp(self) -> tuple[int, int]:
        """A fresh seq and t_ns for a line the writer adds itself."""
        with self._lock:
            self.seq += 1
            return self.seq, time.monotonic_ns() - self._t0

    def _flush_drops(self, t_ns: int) -> None:
        if self.pending_drops:
            event = {"event": "dropped", "count": self.pending_drops}
            self.pending_drops = 0
            self._put(Item(0, t_ns, "tap", event=event), RECORD_OVERHEAD)

    def _put(self, item: Item, size: int) -> None:
        self.seq += 1
        item.seq = self.seq
        self._queue.put(item, size)


# ---------------------------------------------------------------- encoding and writing


def encode_item(item: Item, *, redact: bool | Redactor, max_bytes: int | None) -> bytes:
    """The trace line (with newline) for one queued item."""
    if item.event is not None:
        return encode_record(item.seq, item.t_ns, "tap", encode_event(**item.event))
    payload = line_payload(item.data, item.src, redact=redact, max_bytes=max_bytes)
    if not item.eol:
        payload = b'"eol":false,' + payload
    return encode_record(item.seq, item.t_ns, item.src, payload)


class TraceWriter:
    """The writer thread: encodes queued items and appends them to the trace.

    On the first write error it warns once, tries to append an `error` event, and from then
    on discards what it takes (counted, and reported by a `dropped` event at the end when
    that can still be written). The forwarding threads never wait for it.
    """

    def __init__(
        self,
        fd: int,
        path: Path,
        queue: ByteQueue,
        encode: Callable[[Item], bytes],
        stamper: Stamper,
        warn: Callable[[str], None],
    ) -> None:
        self._fd, self._path, self._queue, self._encode = fd, path, queue, encode
        self._stamper, self._warn = stamper, warn
        self._thread = threading.Thread(target=self._run, name="acp-trace-writer", daemon=True)
        self._at_line_start = True
        self._header = b""
        self.error: str | None = None
        self.written = 0
        self.lost = 0

    def start(self, header: bytes) -> None:
        """Empty the file (when it is a regular one) and start writing, header first."""
        if stat.S_ISREG(os.fstat(self._fd).st_mode):
            with suppress(OSError):
                os.ftruncate(self._fd, 0)
        self._header = header
        self._thread.start()

    def close(self) -> None:
        """Write what is queued, then the final `dropped` event if records were lost."""
        self._queue.close()
        self._thread.join()
        if self.lost:
            self._append_event("dropped", count=self.lost)
        os.close(self._fd)

    def _run(self) -> None:
        self._write(self._header, 0)
        while (batch := self._queue.take(BATCH_BYTES)) is not None:
            self._write(b"".join(self._encode_safely(item) for item in batch), len(batch))

    def _encode_safely(self, item: Item) -> bytes:
        try:
            return self._encode(item)
        except Exception as exc:  # a bug must cost one record, never the trace
            event = {"event": "error", "message": f"cannot encode the record: {exc!r}"}
            return encode_item(Item(item.seq, item.t_ns, "tap", event=event), **_PLAIN)

    def _write(self, data: bytes, count: int) -> None:
        if self.error is not None:
            self.lost += count
            return
        try:
            self._write_all(data)
        except OSError as exc:
            self.lost += count
            self.error = f"cannot write the trace {self._path}: {exc.strerror or exc}"
            self._warn(f"{self.error}; forwarding goes on, the trace stops here")
            self._append_event("error", message=self.error)
        else:
            self.written += count

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            done = os.write(self._fd, view)
            if done:
                self._at_line_start = view[done - 1] == ord("\n")
            view = view[done:]

    def _append_event(self, name: str, **fields: Any) -> None:
        """Best effort: one tap event after the last (possibly cut) line."""
        seq, t_ns = self._stamper.stamp()
        line = encode_item(Item(seq, t_ns, "tap", event={"event": name, **fields}), **_PLAIN)
        with suppress(OSError):
            self._write_all(line if self._at_line_start else b"\n" + line)


_PLAIN: dict[str, Any] = {"redact": False, "max_bytes": None}
