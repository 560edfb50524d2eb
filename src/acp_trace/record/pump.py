"""One stream of the tap: read, stamp, hand on, forward (the forwarding path).

Each `os.read` returns whatever arrived (up to READ_SIZE); the clock is read right after it,
before anything else; the raw bytes go into the ring (ring.py) and then to the other side,
unchanged. Handing on comes before forwarding so that the ring's order is causal: a request
is in the recording before the agent can have read it, let alone answered.
"""

from __future__ import annotations

import os
import select
import time
from contextlib import suppress

from acp_trace.record.ring import RingWriter

READ_SIZE = 64 << 10
RETRY = 0.01  # seconds before retrying a read or write that ran out of memory
GONE = select.POLLERR | select.POLLHUP | select.POLLNVAL


class Pump:
    """One stream: read, stamp, hand on, forward, until the source's EOF. Nothing but the
    source's end or a read error stops it: an error in handing on or forwarding is recorded
    (once) and the stream goes on. `_once` is the forwarding path: kept short on purpose."""

    def __init__(
        self, source: int, sink: int, src: str, out: RingWriter, *, watch: bool = False
    ) -> None:
        self.source, self.sink, self.src, self.out = source, sink, src, out
        self.forwarding = True
        self.sink_closed = False  # the sink's reader closed its end (`watch`)
        self._said: set[str] = set()
        self._read, self._write, self._hand_on = os.read, os.write, out.chunk
        self._poll = None
        if watch:  # wait for the source or for the sink's reader to go, whichever comes first
            poller = select.poll()
            poller.register(source, select.POLLIN)
            poller.register(sink, 0)  # a pipe's write end reports POLLERR once nobody reads
            self._poll = poller.poll

    def run(self) -> None:
        while True:
            try:
                if not self._once():
                    break
            except Exception as exc:  # a bug or no memory: say so, keep the stream going
                self._trouble(type(exc).__name__, f"the {self.src} stream hit {exc!r}; it goes on")
                time.sleep(RETRY)
        self.out.end(self.src, time.monotonic_ns())

    def _once(self) -> bool:
        if self._poll is not None and self._sink_gone():
            return False
        try:
            chunk = self._read(self.source, READ_SIZE)
            t = time.monotonic_ns()  # the stamp: before anything else
        except MemoryError:
            self._trouble("memory", f"out of memory reading the {self.src} stream; retrying")
            time.sleep(RETRY)
            return True
        except OSError as exc:
            self._error(f"cannot read the {self.src} stream: {exc.strerror or exc}", "read")
            return False
        if not chunk:
            return False
        try:
            self._hand_on(self.src, t, chunk)
        except Exception as exc:
            self._not_recorded(chunk, exc)
        if self.forwarding:
            try:
                done = self._write(self.sink, chunk)
            except (MemoryError, OSError):
                done = 0
            if done < len(chunk):
                self._forward(chunk, done)
        return True

    def _sink_gone(self) -> bool:
        """Wait until the source can be read; True when the sink's reader has gone instead
        (the stream then ends here, as it would without the tap in between)."""
        for fd, events in self._poll():  # type: ignore[misc]
            if fd == self.sink and events & GONE:
                self.sink_closed = True
                return True
        return False

    def _not_recorded(self, chunk: bytes, exc: Exception) -> None:
        with suppress(Exception):
            self.out.lose(self.src, chunk)
        self._trouble("record", f"a read of the {self.src} stream was not recorded ({exc!r})")

    def _forward(self, chunk: bytes, done: int) -> None:
        """The rest of a chunk the first write did not take (or failed on)."""
        while done < len(chunk):
            try:
                done += self._write(self.sink, memoryview(chunk)[done:])
            except MemoryError:
                time.sleep(RETRY)
            except OSError as exc:
                self._error(
                    f"cannot forward the {self.src} stream: {exc.strerror or exc}", "forward"
                )
                self.forwarding = False
                return

    def _error(self, message: str, cause: str) -> None:
        self.out.event(time.monotonic_ns(), "error", message=message, cause=cause)

    def _trouble(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            with suppress(Exception):
                self._error(message, "record" if key == "record" else "pump")
