"""The consumer side of the ring (ring.py): the writer process takes frames with it, and the
tap counts with it what a stopped writer left unread."""

from __future__ import annotations

from collections.abc import Iterator

from acp_trace.record.ring import (
    CHUNK,
    CLOSE,
    EVENT,
    GAP_KIND,
    HEADER,
    PUT,
    SKIPPED,
    SOURCES,
    TAKEN,
    TAKEN_AT,
    WRAP,
    Frame,
    Ring,
    fence,
)


class RingReader:
    """The consumer side, used by the writer process (and by the tap, to count what a stopped
    writer left unread)."""

    def __init__(self, ring: Ring, taken: int | None = None, offset: int | None = None) -> None:
        self._ring = ring
        self._taken = ring.ctl[TAKEN] if taken is None else taken
        self._offset = ring.ctl[TAKEN_AT] if offset is None else offset
        self._skipped = 0  # bytes of WRAP skips taken (see `waiting`; the writer starts at 0)

    def pending(self) -> int:
        """Bytes put and not yet taken."""
        return self._ring.ctl[PUT] - self._taken

    def put_data(self) -> int:
        """Bytes of frames put so far: PUT without the space WRAPs skipped (about: PUT and
        SKIPPED are two loads; PUT first, so a skip is never counted twice)."""
        put = self._ring.ctl[PUT]
        fence()
        return put - self._ring.ctl[SKIPPED]

    def waiting(self) -> int:
        """Bytes of frames put and not yet taken: `pending` without the space a WRAP skips."""
        return max(0, self.put_data() - (self._taken - self._skipped))

    def mark(self) -> tuple[int, int, int]:
        """Where the reader is, for `restore` (frames taken but not released are not lost)."""
        return self._taken, self._offset, self._skipped

    def restore(self, mark: tuple[int, int, int]) -> None:
        self._taken, self._offset, self._skipped = mark

    def offset(self) -> int:
        """The ring offset of the next frame."""
        return self._offset

    def taken(self) -> int:
        """Bytes taken so far (frames, and the space a WRAP skips)."""
        return self._taken

    def frames(self, budget: int) -> Iterator[Frame]:
        """The frames put so far, up to about `budget` bytes; `release` gives their space back."""
        ring, size = self._ring, self._ring.size
        end = ring.ctl[PUT]
        fence()
        start = self._taken
        while self._taken < end and self._taken - start < budget:
            left = size - self._offset
            if left < HEADER.size:
                self._skip(left)
                continue
            length, kind, code, _spare, t = HEADER.unpack_from(ring.data, self._offset)
            if kind == WRAP:
                self._skip(left)
                continue
            if not CHUNK <= kind <= CLOSE or length > size or code >= len(SOURCES):
                raise ValueError(f"the ring holds no frame at offset {self._offset}")
            at = self._offset + HEADER.size
            data = bytes(ring.data[at : at + length])
            self._offset = (at + length) % size
            self._taken += HEADER.size + length
            yield Frame(kind, SOURCES[code], t, data)

    def spans(self, budget: int) -> Iterator[memoryview]:
        """The frames put so far, up to about `budget` bytes, as runs of whole frames
        back to back in the ring (WRAPs left out): what the writer moves to its backlog
        as they are. The views are valid until `release`."""
        ring, size = self._ring, self._ring.size
        end = ring.ctl[PUT]
        fence()
        start, run = self._taken, -1
        while self._taken < end and self._taken - start < budget:
            left = size - self._offset
            kind = WRAP if left < HEADER.size else ring.data[self._offset + 4]
            if kind == WRAP:
                if run >= 0:
                    yield ring.data[run : self._offset]
                    run = -1
                self._skip(left)
                continue
            length = int.from_bytes(ring.data[self._offset : self._offset + 4], "little")
            if not CHUNK <= kind <= CLOSE or length > size - self._offset - HEADER.size:
                raise ValueError(f"the ring holds no frame at offset {self._offset}")
            if run < 0:
                run = self._offset
            self._offset += HEADER.size + length
            self._taken += HEADER.size + length
            if self._offset == size:
                yield ring.data[run:size]
                run, self._offset = -1, 0
        if run >= 0:
            yield ring.data[run : self._offset]

    def release(self) -> None:
        """Give the space of the frames taken back to the producer."""
        fence()
        self._ring.ctl[TAKEN_AT] = self._offset
        self._ring.ctl[TAKEN] = self._taken

    def _skip(self, count: int) -> None:
        self._offset = 0
        self._taken += count
        self._skipped += count


def unread_lines(ring: Ring) -> int:
    """Lines and events in the frames put and not released (what a stopped writer left)."""
    count = 0
    try:
        for frame in RingReader(ring).frames(ring.size):
            if frame.kind == CHUNK:
                count += frame.data.count(b"\n")
            elif frame.kind in (EVENT, GAP_KIND):
                count += 1
    except ValueError:  # the writer was stopped between publishing its offset and count
        pass
    return count
