"""The ring's memory: faulted in ahead of the pumps, given back after a burst.

The first write to a page of the shared ring costs a page fault (on a VM about a millisecond
per MiB, as much as forwarding that MiB). A thread of the tap keeps the pages up to LEAD bytes
ahead of the pumps' write position faulted in with madvise(MADV_POPULATE_WRITE) (Linux 5.14;
it changes no data, so it runs beside the pumps), called through ctypes, which lets go of the
GIL for the call: the faults are taken off the forwarding threads, on another core when one
is free, and only as far as the traffic has gone. Without the call the pumps fault pages in
themselves, as any process would.

A burst leaves its pages resident, up to the whole ring. Once the ring has been empty and idle
for IDLE seconds, the tap's main thread gives back everything beyond the first KEEP bytes
(madvise MADV_REMOVE, which frees shared memory): the pumps are held below KEEP meanwhile
(`RingWriter.begin_trim`), and the writer has taken every frame beyond it, so no byte in use
is touched. A quiet session keeps KEEP bytes; a burst costs memory only while it lasts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from acp_trace.record.ring import CONTROL, TAKEN, Ring, RingWriter

MADV_REMOVE = 9
MADV_POPULATE_WRITE = 23
STEP = 2 << 20
LEAD = 8 << 20
AFTER = 1 << 20  # no faulting ahead before this much traffic (a short session needs none)
KEEP = 16 << 20  # of the WARM bytes (ring.py) that a writer keeping up has the pumps reuse
IDLE = 2.0


def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).madvise
    except (ImportError, OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    call.restype = ctypes.c_int
    return call


class RingMemory:
    """Faults the ring in ahead of `out` (a thread) and gives memory back (`maybe_trim`)."""

    def __init__(self, ring: Ring, out: RingWriter, wake: Callable[[], None]) -> None:
        self._ring, self._out, self._wake = ring, out, wake
        self._done = 0  # the offset up to which pages are faulted in
        self._lock = threading.Lock()  # faulting in and giving back never overlap
        self._wanted = threading.Event()
        # madvise through ctypes, set up by the thread once AFTER bytes went by: importing
        # ctypes costs the tap's start-up some milliseconds that a short session never needs
        self._call: Callable[[int, int, int], int] | None = None
        self._base = 0
        self._seen, self._since = -1, time.monotonic()

    def start(self) -> None:
        """Start faulting in once AFTER bytes went by (a short session never pays for it)."""
        self._out.prefault_at = AFTER
        self._out.prefault = self._wanted
        threading.Thread(target=self._run, name="prefault", daemon=True).start()

    def _setup(self) -> bool:
        call = _madvise()
        if call is None:
            return False
        import ctypes

        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self._ring.map)) + CONTROL
        self._call = call
        return True

    def _run(self) -> None:
        size = self._ring.size
        self._wanted.wait()
        if not self._setup():
            self._out.prefault_at = 1 << 62
            return  # no madvise here: the pumps fault pages in themselves
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                target = min(size, self._out.offset() + LEAD)
                while self._done < target:
                    if not self._advise(
                        self._done, min(STEP, size - self._done), MADV_POPULATE_WRITE
                    ):
                        self._out.prefault_at = 1 << 62
                        return  # not supported here: the pumps fault pages in themselves
                    self._done += STEP
                self._out.prefault_at = self._done - LEAD // 2 if self._done < size else 1 << 62

    def maybe_trim(self) -> bool:
        """Give back the memory beyond KEEP when the ring has been empty for IDLE seconds;
        the tap's main thread calls this every few tens of milliseconds."""
        put, now = self._out.put_total(), time.monotonic()
        if put != self._seen:
            self._seen, self._since = put, now
            return False
        if now - self._since < IDLE or self._out.touched <= 2 * KEEP:
            return False
        if self._call is None and not self._setup():
            return False
        target = self._out.begin_trim(KEEP)
        if target is None:
            return False
        self._wake()  # the writer takes the WRAP frame, if there was one, at once
        deadline = time.monotonic() + 1.0
        while self._ring.ctl[TAKEN] < target and time.monotonic() < deadline:
            time.sleep(0.005)
        trimmed = self._ring.ctl[TAKEN] >= target
        if trimmed:
            with self._lock:
                used = max(self._out.touched, self._done)  # written, or faulted in ahead
                end = min(self._ring.size, -(-used // CONTROL) * CONTROL)
                trimmed = self._advise(KEEP, end - KEEP, MADV_REMOVE)
                self._done = min(self._done, KEEP)
                self._out.prefault_at = self._done - LEAD // 2
        self._out.end_trim(KEEP, trimmed)
        self._seen = -1
        return trimmed

    def _advise(self, offset: int, length: int, advice: int) -> bool:
        assert self._call is not None
        return self._call(self._base + offset, length, advice) == 0
