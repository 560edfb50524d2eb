"""The shared-memory ring between the tap's forwarding threads and its writer process.

One anonymous shared mapping, made before the writer process is forked: a control page of
64-bit counters and a ring of frames. The forwarding process is the only producer (its three
pump threads and main thread, under one lock); the writer process is the only consumer.

A frame is a 16-byte header (payload size, kind, source, t) and its payload: the raw bytes of
one read (CHUNK), a tap event (EVENT, marshal of its fields), a stream's end (END), what a
full ring made the tap drop (GAP), the end of the recording (CLOSE). Frames lie back to back;
one that does not fit before the end of the ring (or before `limit`, lowered while the ring
gives memory back, ring_memory.py) starts again at offset 0, and a WRAP header, for which a
frame always leaves room, marks the jump. Each side publishes one counter:
the producer the total bytes it has put (`PUT`), the consumer the total it has taken
(`TAKEN`); a side writes the data before the counter that publishes it, and `fence()` keeps
weakly ordered CPUs from showing the counter first (x86-64 keeps store order anyway).

Putting never blocks and never allocates more than a frame header: when the ring is full a
chunk is dropped and counted per stream (bytes, newlines, whether it ended a line), and the
next frame that fits is preceded by a GAP frame that lets the writer count the lost lines.
The last RESERVE bytes of the ring are kept for tap events and gaps, so a ring full of
traffic still takes the events that say what happened.

The ring is kept warm (issue 34): a page written for the first time costs a page fault, about
a millisecond per MiB on a VM, as much as forwarding that MiB. So the producer goes back to
offset 0 once it is past WARM bytes, if the writer has nearly caught up (at most WRAP_BEHIND
bytes of frames wait): a writer that keeps up (or moves what waits to its backlog,
backlog.py) keeps the pumps on the same WARM bytes of memory. A writer further behind lets
the frames go on into the rest of the ring, as before. Until the writer has taken the WRAP,
the frames have the WARM bytes before it (less what waited): a writer stalled right after an
early wrap has the pumps drop (and count) after about 60 MiB rather than the whole ring's
256, which is what WARM trades against the page faults. Rings under 2 x WARM do not wrap
early.
"""

from __future__ import annotations

import marshal
import mmap
import os
import struct
import threading
from contextlib import suppress

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

HEADER = struct.Struct("<IBBHQ")  # payload size, kind, src, spare, t (monotonic ns)
GAP = struct.Struct("<QQB")  # bytes lost, newlines in them, whether they ended with "\n"
_pack_header = HEADER.pack_into
CHUNK, EVENT, END, GAP_KIND, CLOSE, WRAP = range(1, 7)
SOURCES = ("client", "agent", "stderr", "tap")
SRC = {name: code for code, name in enumerate(SOURCES)}
RESERVE = 64 << 10
MIN_RING = 1 << 20
RING_BYTES = 256 << 20  # the ring's share of --queue-bytes; the writer's backlog has the rest
WARM = 64 << 20  # the offset past which the producer goes back to 0 when the writer keeps up
WRAP_BEHIND = 4 << 20  # ... that is, when at most this many bytes of frames wait
WAKE_AT = 1 << 20  # bytes waiting that wake a sleeping writer
CONTROL = mmap.PAGESIZE

# The control page, as 64-bit slots: the two counters, the offset that goes with TAKEN, what
# the tap tells its writer (whether the agent was reaped) and what the writer tells the tap
# (records written, not written after a failure, dropped from a full ring; whether it is done;
# where its messages end), and the bytes the producer's WRAPs skipped (counted in PUT too).
PUT, TAKEN, TAKEN_AT, AGENT_REAPED, WRITTEN, LOST, DROPPED, WRITER_DONE, MESSAGES_END = range(9)
SKIPPED = 9
# The writer's account so far (writer_state.py): two copies, and which one is whole.
STATE_INDEX, STATE_AT = 15, (16, 64)
MESSAGES_AT = 1024  # bytes: messages from the writer (length, then UTF-8), to the page's end

_FENCE = threading.Lock()
_FENCE.acquire()
# x86-64 shows stores to other CPUs in program order and loads are not reordered with other
# loads, which is all the ring needs; elsewhere a lock's release and acquire order them.
_ORDERED = os.uname().machine in ("x86_64", "amd64", "AMD64", "i386", "i686")


def fence() -> None:
    """Order the stores before it ahead of the loads and stores after it (nothing to do on
    x86-64; a lock's release then acquire, a full barrier, on weakly ordered CPUs)."""
    if not _ORDERED:
        _FENCE.release()
        _FENCE.acquire()


class Frame:
    """One frame taken from the ring (a plain class: `dataclasses` costs the tap's start-up)."""

    __slots__ = ("data", "kind", "src", "t")

    def __init__(self, kind: int, src: str, t: int, data: bytes) -> None:
        self.kind, self.src, self.t, self.data = kind, src, t, data

    def __repr__(self) -> str:
        return f"Frame({self.kind}, {self.src!r}, {self.t}, {self.data[:40]!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return (self.kind, self.src, self.t, self.data) == (
            other.kind,
            other.src,
            other.t,
            other.data,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def event(self) -> dict[str, Any]:
        """The fields of an EVENT frame."""
        value = marshal.loads(self.data)
        assert isinstance(value, dict)
        return value

    def gap(self) -> tuple[int, int, bool]:
        """(bytes, newlines, ended with a newline) of a GAP frame."""
        lost, newlines, ended = GAP.unpack(self.data)
        return lost, newlines, bool(ended)


class Ring:
    """The shared mapping; both processes hold it after the fork."""

    def __init__(self, size: int) -> None:
        self.size = -(-max(MIN_RING, size) // CONTROL) * CONTROL  # whole pages
        self.map = mmap.mmap(-1, CONTROL + self.size, flags=mmap.MAP_SHARED)
        view = memoryview(self.map)
        self._page = view[:CONTROL]
        self.ctl = self._page.cast("Q")
        self.data = view[CONTROL:]

    def post(self, message: str) -> None:
        """Leave a message for the tap to print (the writer's side; a few per recording)."""
        data = message.encode("utf-8", "replace")[:1000]
        at = self.ctl[MESSAGES_END] or MESSAGES_AT
        if at + 2 + len(data) > CONTROL:
            return
        self._page[at + 2 : at + 2 + len(data)] = data
        self._page[at : at + 2] = len(data).to_bytes(2, "little")
        fence()
        self.ctl[MESSAGES_END] = at + 2 + len(data)

    def messages(self, start: int) -> tuple[list[str], int]:
        """The messages after byte offset `start` (0 for all) and the offset after them."""
        end = self.ctl[MESSAGES_END]
        fence()
        at = start or MESSAGES_AT
        found: list[str] = []
        while at < end:
            size = int.from_bytes(self._page[at : at + 2], "little")
            found.append(bytes(self._page[at + 2 : at + 2 + size]).decode("utf-8", "replace"))
            at += 2 + size
        return found, max(at, start)


class RingWriter:
    """The producer side, used by the forwarding process's threads."""

    def __init__(self, ring: Ring, wake_fd: int | None = None) -> None:
        self._ring = ring
        self._lock = threading.Lock()
        self.prefault_at = 1 << 62  # the offset past which to set `prefault` (ring_memory.py)
        self.prefault: threading.Event | None = None
        self.limit = ring.size  # frames end before it (lowered while memory is given back)
        self.warm = WARM if ring.size >= 2 * WARM else ring.size  # early wraps past it
        self.edge = min(self.limit, self.warm)  # the fast path's end: frames end before it
        self.touched = 0  # the highest offset written: the pages that may be resident
        self._offset = 0
        self._put = 0
        self._last_t = 0
        self._skipped = 0  # bytes skipped by WRAPs, published in SKIPPED
        self._gaps: dict[int, list[int]] = {}
        self._wake_fd = wake_fd
        self._woke = False
        self.dropped_chunks = 0
        self.lost_events = 0

    def chunk(self, src: str, t: int, data: bytes) -> None:
        """Hand on one read; a full ring drops it (counted, and told by a GAP frame).

        The common case (no gap to tell, no wrap) is written out here: it runs on the
        forwarding path, once per read.
        """
        code = SRC[src]
        need = HEADER.size + len(data)
        with self._lock:
            offset, put, ring = self._offset, self._put, self._ring
            size = ring.size
            used = put - ring.ctl[TAKEN]
            end = offset + need
            if self._gaps or end + HEADER.size > self.edge or used + need + RESERVE > size:
                self._chunk_slowly(code, t, data)
                return
            if t < self._last_t:  # seq order is t order, whatever the races for the lock
                t = self._last_t
            self._last_t = t
            _pack_header(ring.data, offset, len(data), CHUNK, code, 0, t)
            ring.data[offset + HEADER.size : end] = data
            self._offset = end
            self._put = put = put + need
            if not _ORDERED:
                fence()
            ring.ctl[PUT] = put
            if end > self.touched:
                self.touched = end
            if end > self.prefault_at and self.prefault is not None:
                self.prefault.set()
            if used + need > WAKE_AT:
                if not self._woke:
                    self._woke = True
                    self.wake()
            elif self._woke:
                self._woke = False

    def _chunk_slowly(self, code: int, t: int, data: bytes) -> None:
        gaps = len(self._gaps) * (HEADER.size + GAP.size)
        if not self._fits(gaps + HEADER.size + len(data), RESERVE) or not (
            self._flush_gaps(t) and self._frame(CHUNK, code, t, data, RESERVE)
        ):
            self._lose(code, data)

    def event(self, t: int, name: str, **fields: Any) -> bool:
        """Put a tap event (it may use the reserve); False when even that is full."""
        return self._put_small(EVENT, SRC["tap"], t, marshal.dumps({"event": name, **fields}))

    def end(self, src: str, t: int) -> bool:
        """Say that a stream reached its end (the writer records its unfinished line)."""
        return self._put_small(END, SRC[src], t, b"")

    def close(self, t: int) -> bool:
        """The last frame; the writer finishes once it has taken it."""
        done = self._put_small(CLOSE, SRC["tap"], t, b"")
        self.wake()
        return done

    def wake(self) -> None:
        """Wake the writer now instead of at its next look."""
        if self._wake_fd is not None:
            with suppress(OSError):  # the pipe is full (the writer is awake anyway) or gone
                os.write(self._wake_fd, b"!")

    def put_total(self) -> int:
        """Bytes put so far (wraps included)."""
        return self._put

    def pending_gaps(self) -> list[tuple[str, int, int, bool]]:
        """(stream, bytes, newlines, ended) of the dropped chunks no GAP frame told yet."""
        with self._lock:
            return [(SOURCES[c], g[0], g[1], bool(g[2])) for c, g in self._gaps.items()]

    def unsent_lines(self) -> int:
        """Lines in dropped chunks whose GAP frame never made it into the ring (at the end)."""
        with self._lock:
            return sum(n + (0 if ended else 1) for _lost, n, ended in self._gaps.values())

    def _put_small(self, kind: int, code: int, t: int, payload: bytes) -> bool:
        with self._lock:
            if self._gaps and not self._flush_gaps(t):
                self.lost_events += 1
                return False
            if self._frame(kind, code, t, payload, 0):
                return True
            self.lost_events += 1
            return False

    def lose(self, src: str, data: bytes) -> None:
        """Count a read that could not be handed on (the next frame tells the gap)."""
        with self._lock:
            self._lose(SRC[src], data)

    def _lose(self, code: int, data: bytes) -> None:
        gap = self._gaps.setdefault(code, [0, 0, 0])
        gap[0] += len(data)
        gap[1] += data.count(b"\n")
        gap[2] = data.endswith(b"\n")
        self.dropped_chunks += 1

    def _flush_gaps(self, t: int) -> bool:
        for code in list(self._gaps):
            lost, newlines, ended = self._gaps[code]
            if not self._frame(GAP_KIND, code, t, GAP.pack(lost, newlines, ended), 0):
                return False
            del self._gaps[code]
        return True

    def _fits(self, need: int, keep: int) -> bool:
        """Whether `need` bytes of frames fit now with `keep` to spare (a wrap included)."""
        size, offset = self._ring.size, self._offset
        skip = size - offset if offset + need + HEADER.size > self.limit else 0
        return skip + need + keep <= size - (self._put - self._ring.ctl[TAKEN])

    def _frame(self, kind: int, code: int, t: int, payload: bytes, keep: int) -> bool:
        """Write one frame if it fits with `keep` bytes to spare; publish it."""
        ring = self._ring
        need = HEADER.size + len(payload)
        if not self._fits(need, keep):
            return False
        end = self._offset + need + HEADER.size
        if end > self.limit or (end > self.edge and self._may_wrap_early(need, keep)):
            self._wrap()
        offset = self._offset
        t = self._last_t = max(t, self._last_t)  # seq order is t order, whatever the races
        HEADER.pack_into(ring.data, offset, len(payload), kind, code, 0, t)
        ring.data[offset + HEADER.size : offset + need] = payload
        self._offset = offset + need
        self.touched = max(self.touched, self._offset)
        self._put += need
        fence()
        ring.ctl[PUT] = self._put
        if self._put - ring.ctl[TAKEN] > WAKE_AT:
            if not self._woke:
                self._woke = True
                self.wake()
        elif self._woke:
            self._woke = False
        return True

    def _may_wrap_early(self, need: int, keep: int) -> bool:
        """Whether to go back to offset 0 before the ring's end: the writer has nearly caught
        up, so the warm pages at the start will be free long before the frames reach them."""
        used = self._put - self._ring.ctl[TAKEN]
        skip = self._ring.size - self._offset
        return used <= WRAP_BEHIND and skip + need + keep <= self._ring.size - used

    def _wrap(self) -> None:
        """Go on at offset 0; the WRAP header tells the reader (under the lock)."""
        HEADER.pack_into(self._ring.data, self._offset, 0, WRAP, 0, 0, 0)
        skip = self._ring.size - self._offset
        self._skipped += skip
        self._ring.ctl[SKIPPED] = self._skipped  # before PUT, which counts the skip too
        self._put += skip
        self._offset = 0

    # ------------------------------------------------------------ giving memory back

    def begin_trim(self, keep: int) -> int | None:
        """Keep frames below offset `keep` from now on, wrapping at once when the write
        position is past it; the byte count the reader must reach before the memory beyond
        `keep` may go, or None when the ring is not empty (nothing is changed then)."""
        with self._lock:
            if self._put != self._ring.ctl[TAKEN] or self.touched <= keep:
                return None
            self.limit = keep
            self.edge = min(keep, self.warm)
            if self._offset + HEADER.size > keep:
                self._wrap()
                fence()
                self._ring.ctl[PUT] = self._put
            return self._put

    def end_trim(self, keep: int, trimmed: bool) -> None:
        """Frames may use the whole ring again; `touched` is `keep` when memory went."""
        with self._lock:
            if trimmed:
                self.touched = max(keep, self._offset)
            self.limit = self._ring.size
            self.edge = min(self.limit, self.warm)

    def offset(self) -> int:
        return self._offset
