"""Following trace files as the tap writes them: new bytes only, whole lines only.

A `Follower` keeps one file open read-only (never for writing, never locked: the tap does not
notice it) and, on each `poll`, reads what was appended since the last one. A half-written
last line is held until its newline arrives. A file that shrank (truncated) or whose name now
points at another file (replaced) is read from its start again, and says so. A `Folder`
finds the trace files that appear under the watched directories, the way `find_traces` does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from acp_trace.errors import InputError
from acp_trace.trace.paths import find_traces

READ_BYTES = 1 << 20  # the most bytes one poll takes from one file (the rest waits a poll)
MAX_PARTIAL = 64 << 20  # a line longer than this without a newline is passed on cut
RECENT_SECONDS = 600.0  # a trace in a folder older than this at the start is passed over


@dataclass
class Poll:
    """What one poll of a file gave: whole lines (without their newline), and whether the
    file was truncated or replaced (its lines start again from the header)."""

    lines: list[bytes]
    reopened: str | None = None  # "truncated" or "replaced"
    gone: bool = False  # the name no longer names a file


@dataclass
class Follower:
    """One trace file followed from its start."""

    path: Path
    fd: int | None = None
    ino: tuple[int, int] | None = None
    offset: int = 0
    partial: bytearray = field(default_factory=bytearray)
    size: int = 0  # the bytes read so far

    def poll(self, limit: int = READ_BYTES) -> Poll:
        """The whole lines appended since the last poll (at most about `limit` bytes)."""
        reopened = None
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if self.fd is not None and st is not None and (st.st_dev, st.st_ino) != self.ino:
            reopened = "replaced"
            self.close()
        elif self.fd is not None and st is not None and st.st_size < self.offset:
            reopened = "truncated"
            self.close()
        if self.fd is None:
            if st is None:
                return Poll([], gone=True)
            if not self._open():
                return Poll([], reopened, gone=True)
        assert self.fd is not None
        chunk = os.pread(self.fd, limit, self.offset)
        self.offset += len(chunk)
        self.size += len(chunk)
        return Poll(self._lines(chunk), reopened)

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return False
        st = os.fstat(fd)
        self.fd, self.ino, self.offset = fd, (st.st_dev, st.st_ino), 0
        self.partial.clear()
        return True

    def _lines(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        cut = chunk.rfind(b"\n")
        if cut < 0:
            self.partial += chunk
            if len(self.partial) > MAX_PARTIAL:  # never held whole: passed on as it is
                line = bytes(self.partial)
                self.partial.clear()
                return [line]
            return []
        head = bytes(self.partial) + chunk[:cut] if self.partial else chunk[:cut]
        self.partial[:] = chunk[cut + 1 :]
        return head.split(b"\n")

    def behind(self) -> bool:
        """The file holds bytes not read yet."""
        if self.fd is None:
            return False
        try:
            return os.fstat(self.fd).st_size > self.offset
        except OSError:
            return False

    def pending(self) -> bool:
        """Bytes of a line whose newline has not come yet are held."""
        return bool(self.partial)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.ino, self.offset = None, None, 0
        self.partial.clear()


@dataclass
class Folder:
    """The trace files under some paths: files named, and those that appear in directories.
    A file already in a folder when the watch starts is followed only when it was modified in
    the last `recent` seconds (a folder of last month's traces is not read again; None: every
    file is read, as `--once` does); those passed over are counted (`passed`). Files that
    appear later are always followed, and a file named itself is always read."""

    roots: list[str]
    recent: float | None = RECENT_SECONDS
    known: set[Path] = field(default_factory=set)
    scans: int = 0
    passed: int = 0  # files older than `recent` passed over at the first scan

    def new_files(self) -> list[Path]:
        """Files not seen before, in order. A directory with no trace yet is no error here:
        traces are expected to appear in it."""
        found: list[tuple[Path, bool]] = []
        for root in self.roots:
            try:
                items = find_traces([root])
            except InputError:
                continue
            found.extend((item.path, item.explicit) for item in items)
        first, self.scans = self.scans == 0, self.scans + 1
        fresh = [(p, explicit) for p, explicit in found if p not in self.known]
        self.known.update(p for p, _ in fresh)
        if first and self.recent is not None:
            cutoff = time.time() - self.recent
            kept = [(p, e) for p, e in fresh if e or _modified(p) >= cutoff]
            self.passed, fresh = len(fresh) - len(kept), kept
        return [p for p, _ in fresh]


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def check_roots(roots: Iterable[str]) -> list[str]:
    """The roots to watch; InputError for one that is neither a file nor a directory (a
    directory that does not exist yet is an error too: a typo would watch nothing forever)."""
    out = []
    for root in roots:
        path = Path(root)
        if not (path.is_dir() or path.is_file()):
            what = "not a regular file or a directory" if path.exists() else "no such directory"
            raise InputError(f"{root}: {what} (expected a trace file or a folder of traces)")
        out.append(root)
    return out
