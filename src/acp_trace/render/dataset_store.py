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

import ctypes
import errno
import fcntl
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
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
        self,
        folder: tuple[str, ...],
        name: str,
        write: Callable[[IO[bytes]], object],
        *,
        durable: bool = True,
        sync_folder: bool = True,
    ) -> bool:
        """Write `root/folder/name` with `write(handle)` unless it exists; True if this call
        made it. The file appears whole or not at all. `durable`: its content is on disk
        before it gets its name (fsync); `sync_folder`: so is its name, at once (else call
        `sync` on the folder before anything that counts on it)."""
        staged = self.stage(folder, name, write)
        if staged is None:
            return False
        try:
            if durable:
                with _failing(self.path(folder, name), "cannot write"):
                    handle = os.open(staged.temp, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=staged.fd)
                    try:
                        os.fsync(handle)
                    finally:
                        os.close(handle)
            made = self.commit(staged)
            if sync_folder:
                os.fsync(staged.fd)
            return made
        finally:
            self.discard(staged)

    def stage(
        self, folder: tuple[str, ...], name: str, write: Callable[[IO[bytes]], object]
    ) -> Staged | None:
        """Write what will be `root/folder/name` under a hidden temporary name (not yet
        flushed: `flush` the file system, then `commit`); None when the name exists."""
        fd = self.folder(folder)
        assert fd is not None
        if self.exists(folder, name):
            return None
        staged = Staged(folder, name, temporary_name(name), fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with _failing(self.path(folder, name), "cannot write"):
                handle = os.open(staged.temp, flags, PRIVATE_FILE, dir_fd=fd)
                with os.fdopen(handle, "wb") as f:
                    os.fchmod(handle, PRIVATE_FILE)  # whatever the umask
                    write(f)
        except BaseException:
            self.discard(staged)
            raise
        return staged

    def commit(self, staged: Staged) -> bool:
        """Give a staged file its name unless the name exists; True if this call did."""
        with _failing(self.path(staged.folder, staged.name), "cannot write"):
            made = _commit(staged.fd, staged.temp, staged.name)
        self.discard(staged)
        return made

    def discard(self, staged: Staged) -> None:
        """Remove a staged file's temporary name (after `commit` it is only a second link)."""
        with suppress(OSError):
            os.unlink(staged.temp, dir_fd=staged.fd)

    def flush(self) -> None:
        """Everything written on the dataset's file system so far is on disk (syncfs)."""
        syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
        if syncfs is None or syncfs(self.fd) != 0:
            os.sync()

    def sync(self, folders: Iterable[tuple[str, ...]]) -> None:
        """fsync these folders: the names written into them are on disk."""
        for folder in folders:
            fd = self.folder(folder, create=False)
            if fd is not None:
                os.fsync(fd)

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


@dataclass(frozen=True)
class Staged:
    """A file written under its temporary name `temp` in the folder `fd`, to become `name`."""

    folder: tuple[str, ...]
    name: str
    temp: str
    fd: int


@contextmanager
def _failing(path: Path, what: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _refusal(path, exc, what) from exc


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
