"""Write-once files inside a dataset folder, never through a symlink, never outside it.

Every folder is opened with O_NOFOLLOW from the one above it (`openat`), starting at the
dataset folder itself, so a symlink (or a file) planted anywhere in a path refuses the write
instead of following it. A file is written under a hidden temporary name (`.NAME.PID.RAND.tmp`:
the `.` prefix and the suffix keep every Parquet reader off it), fsynced, then hard-linked to its
final name, which fails if that name exists: the first complete file stays, and a reader never
sees a partial one. Two writers of the same name (a re-export, a concurrent export, a retry
after a crash) therefore converge on one file. Where the file system has no hard links the
temporary file is renamed over the name instead (still atomic, last one wins).

`lock(exclusive=...)` is an flock on `DIR/_lock`: exports share it, compaction holds it alone.
"""

from __future__ import annotations

import errno
import fcntl
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from acp_trace.errors import OutputError

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
LOCK_FILE = "_lock"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV}


def temporary_name(name: str) -> str:
    """The hidden name a file is written under before it gets `name`."""
    return f".{name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"


class Store:
    """The dataset folder `root`, opened without following a symlink; folders below it are
    opened (and made, 0700) one level at a time. Close it (or use it as a context manager)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self.fd = os.open(root, _DIR_FLAGS)
        except OSError as exc:
            raise _refusal(root, exc) from exc
        self._dirs: dict[tuple[str, ...], int] = {(): self.fd}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._dirs.values():
            with suppress(OSError):
                os.close(fd)
        self._dirs.clear()

    def forget(self, folder: tuple[str, ...]) -> None:
        """Close the descriptors of `folder` and below (it was moved or removed)."""
        for key in [k for k in self._dirs if k[: len(folder)] == folder and k]:
            with suppress(OSError):
                os.close(self._dirs.pop(key))

    def path(self, folder: tuple[str, ...], name: str | None = None) -> Path:
        return self.root.joinpath(*folder, *([name] if name else []))

    def folder(self, folder: tuple[str, ...], *, create: bool = True) -> int | None:
        """The descriptor of `root/folder...`, each level made when missing (with `create`)
        and opened without following a symlink; None when it is missing and not created."""
        if folder in self._dirs:
            return self._dirs[folder]
        parent = self.folder(folder[:-1], create=create)
        if parent is None:
            return None
        name, made = folder[-1], False
        if create:
            try:
                os.mkdir(name, PRIVATE_DIR, dir_fd=parent)
                made = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise _refusal(self.path(folder), exc) from exc
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError as exc:
            raise _refusal(self.path(folder), exc) from exc
        if made:
            os.fchmod(fd, PRIVATE_DIR)  # whatever the umask
        self._dirs[folder] = fd
        return fd

    def exists(self, folder: tuple[str, ...], name: str) -> bool:
        """Whether `root/folder/name` is there (not followed if it is a symlink)."""
        fd = self.folder(folder, create=False)
        if fd is None:
            return False
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def read(self, folder: tuple[str, ...], name: str) -> bytes | None:
        """The bytes of a regular file `root/folder/name`, None when missing (a symlink or
        anything else is refused)."""
        fd = self.folder(folder, create=False)
        if fd is None:
            return None
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refusal(self.path(folder, name), exc) from exc
        with os.fdopen(handle, "rb") as f:
            return f.read()

    def write_once(
        self, folder: tuple[str, ...], name: str, write: Callable[[IO[bytes]], object]
    ) -> bool:
        """Write `root/folder/name` with `write(handle)` unless it exists; True if this call
        made it. The file appears whole or not at all."""
        fd = self.folder(folder)
        assert fd is not None
        if self.exists(folder, name):
            return False
        temp = temporary_name(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            handle = os.open(temp, flags, PRIVATE_FILE, dir_fd=fd)
            try:
                os.fchmod(handle, PRIVATE_FILE)  # whatever the umask
                with os.fdopen(handle, "wb", closefd=False) as f:
                    write(f)
                    f.flush()
                os.fsync(handle)
            finally:
                os.close(handle)
            made = _commit(fd, temp, name)
            os.fsync(fd)
            return made
        except OSError as exc:
            raise _refusal(self.path(folder, name), exc, "cannot write") from exc
        finally:
            with suppress(OSError):
                os.unlink(temp, dir_fd=fd)

    @contextmanager
    def lock(self, *, exclusive: bool) -> Iterator[None]:
        """An flock on `root/_lock`: shared for exports, exclusive for compaction."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(LOCK_FILE, flags, PRIVATE_FILE, dir_fd=self.fd)
        except OSError as exc:
            raise _refusal(self.path((), LOCK_FILE), exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # releases the lock


def _commit(fd: int, temp: str, name: str) -> bool:
    """Give the written `temp` its final `name`: a hard link that fails if the name exists."""
    try:
        os.link(temp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)  # no hard links here
    return True


def _refusal(path: Path, exc: OSError, what: str = "cannot open the folder") -> OutputError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return OutputError(
            f"{path}: is a symlink or not a folder; the dataset writes only into real folders "
            "inside its folder (remove it, or name another --dataset)"
        )
    return OutputError(f"{path}: {what} ({exc.strerror or exc})")
