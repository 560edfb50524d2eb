"""Faulting the ring's pages in ahead of the pumps, so they never pay for fresh memory.

The first write to a page of the shared ring costs a page fault (on a VM about a millisecond
per MiB, as much as forwarding that MiB); once the ring has been written all the way round,
its pages stay. A thread of the tap keeps the pages up to LEAD bytes ahead of the pumps'
write position faulted in with madvise(MADV_POPULATE_WRITE) (Linux 5.14; it changes no data,
so it can run beside the pumps), called through ctypes, which lets go of the GIL for the
call: the faults are taken off the forwarding threads, on another core when one is free, and
only as far as the traffic has gone (the memory of a quiet session stays small). Where the
call is missing the pumps fault the pages in themselves, as any process would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from acp_trace.record.ring import CONTROL, Ring, RingWriter

MADV_POPULATE_WRITE = 23
STEP = 2 << 20
LEAD = 8 << 20
AFTER = 1 << 20


def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).madvise
    except (ImportError, OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    call.restype = ctypes.c_int
    return call


class Prefaulter:
    """Keeps the ring faulted in up to LEAD bytes ahead of the writer's position (which is
    the byte count put so far: in the first lap they are the same; after it, all is done)."""

    def __init__(self, ring: Ring, out: RingWriter) -> None:
        self._ring, self._out = ring, out
        self._done = 0  # bytes of the data area faulted in so far
        self.wanted = threading.Event()
        self._call = _madvise()
        self._base = 0
        if self._call is not None:
            import ctypes

            self._base = ctypes.addressof(ctypes.c_char.from_buffer(ring.map)) + CONTROL

    def start(self) -> None:
        """Start the thread; it begins once AFTER bytes went by (a short session, or the
        agent's start-up, never pays for it)."""
        if self._call is not None:
            self._out.prefault_at = AFTER
            self._out.prefault = self.wanted
            threading.Thread(target=self._run, name="prefault", daemon=True).start()

    def _run(self) -> None:
        assert self._call is not None
        size = self._ring.size
        self.wanted.wait()
        while self._done < size:
            target = min(size, self._out.put_total() + LEAD)
            while self._done < target:
                length = min(STEP, size - self._done)
                if self._call(self._base + self._done, length, MADV_POPULATE_WRITE) != 0:
                    self._out.prefault_at = 1 << 62
                    return  # not supported here: the pumps fault pages in themselves
                self._done += length
            # wake again when the pumps are LEAD/2 short of the end of what is faulted in
            self._out.prefault_at = self._done - LEAD // 2 if self._done < size else 1 << 62
            self.wanted.clear()
            if self._out.put_total() <= self._out.prefault_at:
                self.wanted.wait()
