"""Handing a reading worker's rows to the parent process without a pipe.

A worker writes its rows as Arrow IPC into a file of its own in a private directory of shared
memory (`/dev/shm`, created 0700 by the parent, each file 0600 and opened with O_EXCL and
O_NOFOLLOW) and sends back only the file's path; the parent reads the file (polars maps it
and copies the rows into its own memory) and unlinks it at once. Through the pool's pipe
the same rows cost a pickle, two copies through the kernel and an unpickle, most of it on
the parent's one thread. Where no such directory can be made, or a write fails (a full or
small `/dev/shm`), the rows travel as bytes as before: the result is the same either way.
The directory is removed with whatever is left in it when the reading ends, whether it ends
well or not.
"""

from __future__ import annotations

import io
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import polars as pl

SHARED_MEMORY = "/dev/shm"
Packed = str | bytes | None  # a file's path, the rows themselves, or no rows

_names = itertools.count()


@contextmanager
def handoff_directory(base: str | None = None) -> Iterator[str | None]:
    """A private directory for the workers' files (in `base`, by default SHARED_MEMORY, when
    it is a writable directory, else the system's temp dir), removed on exit; None when none
    can be made."""
    base = SHARED_MEMORY if base is None else base
    parent = base if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK) else None
    try:
        path = tempfile.mkdtemp(prefix="acp-trace-rows-", dir=parent)
    except OSError:
        yield None
        return
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def pack(frames: list[pl.DataFrame], directory: str | None) -> Packed:
    """The rows of `frames` as a file in `directory` (its path), or as bytes when there is no
    directory or the file cannot be written; None for no frames."""
    if not frames:
        return None
    frame = pl.concat(frames, rechunk=False)
    if directory is not None:
        path = os.path.join(directory, f"{os.getpid()}-{next(_names)}.arrow")
        try:
            _write(frame, path)
            return path
        except OSError:
            with suppress(OSError):
                os.unlink(path)
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compat_level=pl.CompatLevel.newest())
    return buffer.getvalue()


def _write(frame: pl.DataFrame, path: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as handle:
        frame.write_ipc(handle, compat_level=pl.CompatLevel.newest())


def unpack(packed: Packed) -> list[pl.DataFrame]:
    """The frames a worker packed; a file is unlinked once read."""
    if packed is None:
        return []
    if isinstance(packed, bytes):
        return [pl.read_ipc(io.BytesIO(packed))]
    try:
        return [pl.read_ipc(packed)]
    finally:
        with suppress(OSError):
            os.unlink(packed)
