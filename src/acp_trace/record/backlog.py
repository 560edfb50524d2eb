"""The writer's backlog: frames moved out of the ring while the writer is behind (issue 34).

A writer that encodes while a huge replay streams through the tap takes a core from the
forwarding (two cores: the agent, the pump and the client need them), and a ring that fills
up sends the pumps into pages never written before (a page fault per 4 KiB, about a
millisecond per MiB on a VM). So once more than SPILL_AT bytes of frames wait in the ring,
the writer moves them, as they are (whole frames back to back, one `pwrite` per run), to the
end of its backlog and gives their room in the ring back at once: the pumps stay on the
ring's first, warm pages (ring.py, WARM). It encodes from the backlog's head when the traffic
lets it (writer.py says when), in the order the frames came; new frames go behind the
backlog until it is empty.

The backlog is a memfd: anonymous memory with a file's interface, never a file on a disk (it
holds the traffic before redaction; like any memory, only swap could write it out), shared with the tap, which counts what it holds if it has to
stop the writer (tail.py). It holds at most `capacity` bytes (the part of `--queue-bytes`
beyond the ring); what it cannot take waits in the ring as before. Encoded frames give their
memory back as the head moves (a hole punched every PUNCH bytes) and all of it when the
backlog is empty. A backlog that cannot be written (no memory) is given up for the rest of
the recording: its frames are still encoded, and the ring goes on alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import suppress

from acp_trace.record import account
from acp_trace.record.account import WriterState
from acp_trace.record.ring import CHUNK, CLOSE, HEADER, SOURCES, Frame, Ring
from acp_trace.record.ring_reader import RingReader

SPILL_AT = 2 << 20  # bytes of frames waiting in the ring that start a spill
READ_SIZE = 1 << 20  # bytes read back at a time
MARGIN = 1 << 20  # room kept for the frame that ends a spill (a read is at most 64 KiB)
PUNCH = 16 << 20  # encoded bytes given back at a time while the backlog is in use
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2


class Backlog:
    """The writer's side: `spill` frames in from the ring, `frames` out from the head."""

    def __init__(self, fd: int, capacity: int) -> None:
        self.fd, self.capacity = fd, capacity
        self.start = 0  # file offset of the first frame not yet encoded
        self.end = 0  # file offset after the last frame moved in
        self.failed: str | None = None  # why the backlog was given up
        self._freed = 0  # bytes below it were given back
        self._punch: Callable[[int, int], bool] | None = None

    @property
    def held(self) -> int:
        """Bytes of frames not yet encoded."""
        return self.end - self.start

    def room(self) -> int:
        """Bytes that may still be moved in."""
        return self.capacity - (self.end - self._freed)

    def spill(self, reader: RingReader) -> int:
        """Move the frames waiting in `reader`'s ring to the backlog's end (as many as fit);
        the bytes moved. The caller publishes the new state, then releases the reader."""
        budget = self.room() - MARGIN
        if self.failed or budget <= 0:
            return 0
        mark, end = reader.mark(), self.end
        try:
            for span in reader.spans(budget):
                while span:
                    written = os.pwrite(self.fd, span, end)
                    if written <= 0:
                        raise OSError(0, "the backlog took nothing")
                    span, end = span[written:], end + written
        except OSError as exc:  # ENOMEM, ENOSPC: the frames stay in the ring
            reader.restore(mark)
            with suppress(OSError):
                os.ftruncate(self.fd, self.end)
            self.failed = exc.strerror or str(exc)
            return 0
        moved, self.end = end - self.end, end
        return moved

    def taken(self) -> int:
        """Where the head is (as `RingReader.taken`: the writer encodes from either)."""
        return self.start

    def frames(self, budget: int) -> Iterator[Frame]:
        """The frames at the head, up to about `budget` bytes, each taken as it is yielded."""
        for frame, after in read_frames(self.fd, self.start, self.end, budget):
            self.start = after
            yield frame

    def release(self) -> None:
        """Give back the memory of encoded frames (after the caller published `start`)."""
        if self.start == self.end and self.end:
            with suppress(OSError):
                os.ftruncate(self.fd, 0)
            self.start = self.end = self._freed = 0
        elif self.start - self._freed >= PUNCH:
            hole = self.start - self.start % PUNCH
            if self._punch is None:
                self._punch = _hole_puncher(self.fd)
            if self._punch(self._freed, hole - self._freed):
                self._freed = hole


def keep_up(reader: RingReader, backlog: Backlog, publish: Callable[[], object]) -> int:
    """Move what waits in the ring to the backlog when the writer is behind (more than
    SPILL_AT bytes wait), and whatever waits while the backlog holds frames (they come
    after them); the bytes moved. `publish()` says where the writer is before the ring's room
    is given back: the tap counts from it if it has to stop the writer."""
    if backlog.failed or (not backlog.held and reader.waiting() <= SPILL_AT):
        return 0
    moved = backlog.spill(reader)
    if moved:
        publish()
        reader.release()
    return moved


def publish_position(ring: Ring, reader: RingReader, backlog: Backlog) -> None:
    """What a writer that has no encoder yet publishes (while it imports one, `keep_up`
    keeps the pumps on warm pages): where it took the ring to, what its backlog holds."""
    state = WriterState(taken=reader.taken(), taken_at=reader.offset())
    state.backlog_start, state.backlog_end = backlog.start, backlog.end
    account.publish(ring, state)


def read_frames(
    fd: int, start: int, end: int, budget: int | None = None
) -> Iterator[tuple[Frame, int]]:
    """The frames of a backlog file between offsets `start` and `end` (those that begin
    within `budget` bytes of `start`), each with the offset after it; ValueError when the
    bytes there are not frames."""
    stop = end if budget is None else min(end, start + budget)
    at, base, buffer = start, start, b""
    while at < stop:
        offset = at - base
        if len(buffer) - offset < HEADER.size:
            buffer, base, offset = _read(fd, at, end, HEADER.size), at, 0
        length, kind, code, _spare, t = HEADER.unpack_from(buffer, offset)
        size = HEADER.size + length
        if not CHUNK <= kind <= CLOSE or code >= len(SOURCES) or at + size > end:
            raise ValueError(f"the backlog holds no frame at offset {at}")
        if len(buffer) - offset < size:
            buffer, base, offset = _read(fd, at, end, size), at, 0
        at += size
        yield Frame(kind, SOURCES[code], t, buffer[offset + HEADER.size : offset + size]), at


def _read(fd: int, at: int, end: int, need: int) -> bytes:
    data = os.pread(fd, min(max(READ_SIZE, need), end - at), at)
    if len(data) < need:
        raise ValueError(f"the backlog ends at offset {at + len(data)}, before {end}")
    return data


def _hole_puncher(fd: int) -> Callable[[int, int], bool]:
    """fallocate(PUNCH_HOLE) through ctypes (the writer's process only), or a no-op."""
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).fallocate
        call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long)
        call.restype = ctypes.c_int
    except (ImportError, OSError, AttributeError):
        return lambda _offset, _length: False

    def punch(offset: int, length: int) -> bool:
        return bool(call(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, offset, length) == 0)

    return punch
