"""Writing the trace file in the writer process: whole records only, whatever goes wrong.

- A regular trace always holds whole records: when a write fails (disk full, a file size
  limit, an I/O error) the file is cut back to its last complete record and ends with an
  `error` event. Room for that event is reserved ahead of each batch (fallocate with
  FALLOC_FL_KEEP_SIZE, so the file never shows the reserve), and under a file size limit
  (RLIMIT_FSIZE) the records stop EVENT_ROOM bytes before it.
- After a failure nothing more is written; what was not written is counted (`lost`).
- A trace removed while recording (its link count drops to 0, also when its directory is
  removed) is noticed within CHECK_EVERY seconds: said once, then nothing more is written and
  the file is closed, so its disk space is freed.
- Devices and FIFOs are written as streams (no cutting back, no reserve).

`say` gets each message a person should read (once per problem); the writer process relays
it to the tap, which prints it.
"""

from __future__ import annotations

import errno
import os
import resource
import stat
import time
from collections.abc import Callable

from acp_trace.record.trace_file import TraceTarget

RESERVE = 64 << 10
EVENT_ROOM = 4 << 10
CHECK_EVERY = 0.5
IOV_MAX = 512
FALLOC_FL_KEEP_SIZE = 1

EventLine = Callable[[int, str, str], bytes]  # (seq, message, cause) -> an `error` line


class TraceSink:
    """The trace file, from the header to the last record."""

    def __init__(self, fd: int, path: str, say: Callable[[str], None], event: EventLine):
        self._fd, self._path, self._say, self._event = fd, path, say, event
        mode = os.fstat(fd).st_mode
        self._regular = stat.S_ISREG(mode)
        self._limit = _file_size_limit() if self._regular else None
        self._fallocate = _fallocate() if self._regular else None
        self._good = 0  # bytes of whole lines written
        self._last_seq = 0
        self._checked = time.monotonic()
        self.written = 0
        self.lost = 0
        self.error: str | None = None
        self.stopped = False

    @classmethod
    def open(cls, target: TraceTarget, say: Callable[[str], None], event: EventLine) -> TraceSink:
        """The sink for a trace target; one that counts everything as lost when the trace
        cannot be opened (a FIFO whose open failed)."""
        fd = target.fd
        if fd is not None:
            target.fd = None
            return cls(fd, target.path, say, event)
        try:
            return cls(target.open_later(), target.path, say, event)
        except OSError as exc:
            sink = cls(os.open(os.devnull, os.O_WRONLY), target.path, say, event)
            sink.error = f"cannot open the trace {target.path}: {exc.strerror or exc}"
            say(f"{sink.error}; forwarding goes on, nothing is recorded")
            sink.stopped = True
            return sink

    def start(self, header: bytes) -> None:
        """Write the header line; on a disk too full for the reserve, the header and the
        `error` event go in without one, if they fit at all."""
        if self.stopped:
            return
        if self._reserve(len(header)):
            self._write([header], header=True)
            return
        try:
            _write_all(self._fd, [header])
        except OSError:
            self._cut_back()
        else:
            self._good = len(header)
        self._fail(os.strerror(errno.ENOSPC))

    @property
    def good(self) -> int:
        """Bytes of whole lines in the trace."""
        return self._good

    @property
    def last_seq(self) -> int:
        """The `seq` of the trace's last line (0 after the header)."""
        return self._last_seq

    def write(self, lines: list[bytes], first_seq: int) -> int:
        """Append records `first_seq`, `first_seq + 1`, ... or count them as lost; how many
        were written (the first ones: the rest were not)."""
        before = self.written
        if lines and not self.stopped:
            self._write(lines, first_seq=first_seq)
        elif lines:
            self.lost += len(lines)
        if not self.stopped and time.monotonic() - self._checked > CHECK_EVERY:
            self.check_removed()
        return self.written - before

    def write_last(self, line: Callable[[int], bytes]) -> bool:
        """Append the trace's last line (`line(seq)`, the account) even after a failed write,
        in the room kept for it; False when it could not be written (the trace is removed or
        the disk takes nothing)."""
        if self._fd < 0:
            return False
        if not self.stopped:
            return self.write([line(self._last_seq + 1)], self._last_seq + 1) == 1
        data = line(self._last_seq + 1)
        try:
            _write_all(self._fd, [data])
        except OSError:
            self._cut_back()
            return False
        self._good += len(data)
        self._last_seq += 1
        return True

    def check_removed(self) -> None:
        """Stop when the trace no longer has a name (it or its directory was removed)."""
        self._checked = time.monotonic()
        try:
            removed = self._regular and os.fstat(self._fd).st_nlink == 0
        except OSError:
            return
        if removed and not self.stopped:
            self.error = f"the trace {self._path} was removed while recording"
            self._say(f"{self.error}; forwarding goes on, nothing more is recorded")
            detail = f"{self.error} (its link count is 0): nothing after this is recorded"
            self._append_error(detail, "removed")
            self.stopped = True
            self._close()

    def close(self) -> None:
        if not self.stopped:
            self.check_removed()
        if self._regular and self._good == 0 and self._fd >= 0:
            self._remove_empty()
        self._close()

    def _remove_empty(self) -> None:
        """Leave no empty trace behind (a disk that took not even the header): remove it,
        if its name is still this file's, and say so."""
        try:
            mine, named = os.fstat(self._fd), os.lstat(self._path)
            if (mine.st_dev, mine.st_ino) != (named.st_dev, named.st_ino):
                return
            os.unlink(self._path)
        except OSError:
            return
        why = f" ({self.error})" if self.error else ""
        self._say(f"the trace {self._path} took not even its header{why}: it was removed")

    # ------------------------------------------------------------ writing

    def _write(self, lines: list[bytes], *, header: bool = False, first_seq: int = 0) -> None:
        count, reason = self._room_for(lines)
        if count:
            try:
                _write_all(self._fd, lines[:count])
            except OSError as exc:
                self._count_lost(lines, header)
                self._fail(exc.strerror or str(exc))
                return
            self._good += sum(len(line) for line in lines[:count])
            if not header:
                self.written += count
                self._last_seq = first_seq + count - 1
        if reason is not None:
            self._count_lost(lines[count:], header)
            self._fail(reason)

    def _room_for(self, lines: list[bytes]) -> tuple[int, str | None]:
        """How many of `lines` can be written, and why not all of them."""
        count, reason = len(lines), None
        if self._limit is not None:
            count = _prefix(lines, self._limit - EVENT_ROOM - self._good)
            if count < len(lines):
                reason = f"it reached the file size limit of {self._limit} bytes (RLIMIT_FSIZE)"
        while count and not self._reserve(sum(len(line) for line in lines[:count])):
            count //= 2
            reason = os.strerror(errno.ENOSPC)
        return count, reason

    def _count_lost(self, lines: list[bytes], header: bool) -> None:
        if not header:
            self.lost += len(lines)

    def _reserve(self, size: int) -> bool:
        """Allocate the batch and RESERVE bytes after it; False when the disk has no room."""
        if self._fallocate is None:
            return True
        try:
            self._fallocate(self._fd, self._good, size + RESERVE)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                return False
            self._fallocate = None  # not supported here: write without a reserve
        return True

    def _fail(self, reason: str) -> None:
        """Cut back to the last whole record, end the trace with an `error` event, stop."""
        self.error = f"cannot write the trace {self._path}: {reason}"
        self._say(f"{self.error}; forwarding goes on, the trace stops here")
        self._cut_back()
        self._reserve(2 * EVENT_ROOM)  # best effort: room for this event and the account
        self._append_error(self.error, "write")
        self.stopped = True

    def _append_error(self, message: str, cause: str) -> None:
        line = self._event(self._last_seq + 1, message, cause)
        try:
            _write_all(self._fd, [line])
        except OSError:
            self._cut_back()
        else:
            self._good += len(line)
            self._last_seq += 1

    def _cut_back(self) -> None:
        if self._regular:
            try:
                os.ftruncate(self._fd, self._good)
                os.lseek(self._fd, self._good, os.SEEK_SET)
            except OSError:
                pass

    def _close(self) -> None:
        if self._fd >= 0:
            try:
                if self._regular and self._fallocate is not None:
                    os.ftruncate(self._fd, self._good)  # give back the reserve
            except OSError:
                pass
            os.close(self._fd)
            self._fd = -1


def _prefix(lines: list[bytes], room: int) -> int:
    """How many of `lines` fit in `room` bytes."""
    count = 0
    for line in lines:
        room -= len(line)
        if room < 0:
            break
        count += 1
    return count


def _write_all(fd: int, lines: list[bytes]) -> None:
    """Write every line, in groups of at most IOV_MAX buffers, finishing short writes."""
    for start in range(0, len(lines), IOV_MAX):
        group = lines[start : start + IOV_MAX]
        done = os.writev(fd, group)
        total = sum(len(line) for line in group)
        if done < total:
            rest = memoryview(b"".join(group))[done:]
            while rest:
                rest = rest[os.write(fd, rest) :]


def _file_size_limit() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def _fallocate() -> Callable[[int, int, int], None] | None:
    """fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) through libc, or None."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.fallocate
    except (ImportError, OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong)

    def fallocate(fd: int, offset: int, length: int) -> None:
        if call(fd, FALLOC_FL_KEEP_SIZE, offset, length) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return fallocate
