"""Writing outputs: one layer for every command's `-o`, with one rule (docs/outputs.md).

No output ever overwrites an input, follows a symlink, replaces a device or lands
world-readable:

- a file is written to a temporary file in the target's directory (created exclusively, so
  nothing planted there is followed) and renamed over the target: a symlink at the target is
  replaced, never written through, and a reader never sees half a file;
- `-o -` is stdout; `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N` are the
  open descriptor they name, written to where it stands (a pipe, a terminal, a file the shell
  opened); a character device (`/dev/null`) or a FIFO is opened and written to, never
  replaced; a symlink to a device or a FIFO, a block device or a socket is refused;
- every file is private, mode 0600 whatever the umask, and a new directory 0700;
- a trailing `/` means a directory, and so does an existing directory. A missing directory is
  created when its parent exists; a missing parent is an error (never `mkdir -p` up to the
  root). A file's directory must exist;
- an output that is one of the command's inputs (the same file, by inode) is refused
  (`check_not_inputs`), and so is every wrong kind of target, before any input is read;
- each problem, OS errors included (a name past the file system's limit), is one
  `OutputError` that names the path.

The recorder's trace file has its own rules (`acp_trace.record.trace_file`: O_NOFOLLOW|O_EXCL).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from acp_trace.errors import OutputError

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
STDOUT = "-"
NAME_MAX = 255  # bytes in one file name on Linux's file systems
_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")
_STD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}

Target = str | os.PathLike[str]


def descriptor(target: Target) -> int | None:
    """The open file descriptor `target` names (`-`: stdout, `/dev/stdout`, `/dev/stderr`,
    `/dev/fd/N`, `/proc/self/fd/N`), or None for any other path."""
    text = os.fspath(target)
    if text == STDOUT:
        return 1
    if text in _STD_PATHS:
        return _STD_PATHS[text]
    found = _FD_PATH.fullmatch(text)
    return int(found.group(1)) if found else None


def to_stdout(target: Target | None) -> bool:
    """True when `target` is the command's stdout (so its notes go elsewhere)."""
    return target is not None and descriptor(target) == 1


def wants_directory(target: Target) -> bool:
    """True when `-o` names a directory: it exists as one, or it ends with a `/`."""
    text = os.fspath(target)
    if descriptor(text) is not None:
        return False
    if text.endswith(("/", os.sep)):
        return True
    status = _stat(text, follow=True)
    return status is not None and stat.S_ISDIR(status.st_mode)


def check_file_target(target: Target) -> None:
    """Refuse, before any work, a `-o` for a file that names a directory (or ends in `/`), a
    block device, a socket or a link to a device, a descriptor that is not open for writing,
    or whose directory does not exist. A regular file, a link (replaced), a character
    device, a FIFO and stdout are fine."""
    text = os.fspath(target)
    fd = descriptor(text)
    if fd is not None:
        _check_descriptor(text, fd)
        return
    if text.endswith(("/", os.sep)):
        raise OutputError(f"{text}: expected a file name for the output, found a directory name")
    status = _stat(text)
    if status is None:
        _check_parent(text, Path(text).parent)
        return
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"{text}: expected a file for the output, found a directory")
    if stat.S_ISLNK(mode):
        pointed = _stat(text, follow=True)
        if pointed is not None and _is_special(pointed.st_mode):
            raise OutputError(
                f"{text}: a symbolic link to a device or pipe ({os.path.realpath(text)}); "
                "name the device itself, or remove the link"
            )
    elif not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise OutputError(
            f"{text}: expected a regular file, a character device or a FIFO for the output, "
            f"found a {_kind(mode)}"
        )
    _check_parent(text, Path(text).parent)


def check_directory_target(target: Target) -> None:
    """Refuse, before any work, a `-o` for a directory that names something else (a file,
    stdout), or whose parent does not exist (only the last part of the path is created)."""
    text = os.fspath(target)
    if descriptor(text) is not None:
        raise OutputError(
            f"{text}: this output is several files, so it needs a directory (DIR/), not a stream"
        )
    bare = text.rstrip("/" + os.sep) or text  # `README.md/` names the file README.md
    status = _stat(bare, follow=True)
    if status is not None:
        if not stat.S_ISDIR(status.st_mode):
            what = "a file" if stat.S_ISREG(status.st_mode) else f"a {_kind(status.st_mode)}"
            raise OutputError(f"{text}: expected a directory for the output, found {what}")
        return
    _check_parent(text, Path(bare).parent)


def check_not_inputs(outputs: Iterable[Target], inputs: Iterable[Target]) -> None:
    """Refuse an output that is one of the inputs: the same file (device and inode, so a
    hard link, a symlink or another spelling of the path counts too)."""
    known: dict[tuple[int, int], str] = {}
    for source in inputs:
        status = _stat(os.fspath(source), follow=True)
        if status is not None and stat.S_ISREG(status.st_mode):
            known.setdefault((status.st_dev, status.st_ino), os.fspath(source))
    for out in outputs:
        text = os.fspath(out)
        fd = descriptor(text)
        try:
            status = os.fstat(fd) if fd is not None else _stat(text, follow=True)
        except OSError:
            continue
        if status is not None and (status.st_dev, status.st_ino) in known:
            source = known[(status.st_dev, status.st_ino)]
            raise OutputError(
                f"{text}: is the input {source}; the output would destroy it (choose another -o)"
            )


def output_dir(target: Target, *, inside: Target | None = None) -> Path:
    """The directory `target`, created (0700) when it does not exist and its parent does; an
    existing one is used as it is. With `inside` (a directory this command made or was given),
    the missing levels between it and `target` are created too (a dataset's partitions)."""
    path = Path(target)
    levels = [path]
    if inside is not None and Path(inside) in path.parents:
        levels = [p for p in (path, *path.parents) if Path(inside) in p.parents]
    else:
        check_directory_target(target)
    for folder in reversed(levels):
        try:
            with suppress(FileExistsError):
                folder.mkdir(mode=PRIVATE_DIR)
                os.chmod(folder, PRIVATE_DIR)  # whatever the umask
        except OSError as exc:
            raise failure(folder, exc, "cannot create the directory") from exc
        if not folder.is_dir():
            raise OutputError(f"{folder}: expected a directory for the output, found a file")
    return path


def write_file(target: Target, data: bytes | str) -> Path:
    """Write `data` to `target`: atomically to a file, or to the stream it names."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with writing(target) as handle:
        handle.write(payload)
    return Path(target)


@contextmanager
def writing(target: Target) -> Iterator[IO[bytes]]:
    """A binary handle on `target`: a temporary file renamed over it on success (removed on
    failure), or the stream it names (stdout, a descriptor, a device, a FIFO)."""
    with replacing(target) as temp:
        try:
            with open(temp, "wb") as handle:
                yield handle
        except OSError as exc:
            raise failure(target, exc, "cannot write") from exc


@contextmanager
def replacing(target: Target) -> Iterator[Path]:
    """A temporary path for a library to write (a figure, a Parquet file); on success it gets
    its mode and is renamed over `target` (or, for a stream, copied into it), on failure it
    is removed. The temporary name is short, so any name that fits the file system works."""
    text = os.fspath(target)
    check_file_target(text)
    if is_stream(text):
        with _streaming(text) as temp:
            yield temp
        return
    path = Path(text)
    folder = path.parent
    try:
        fd, name = tempfile.mkstemp(prefix=".acp-trace-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise failure(path, exc, f"cannot write in {folder}") from exc
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        os.chmod(temp, PRIVATE_FILE)
        os.replace(temp, path)
    except OSError as exc:
        raise failure(path, exc, "cannot write") from exc
    finally:
        with suppress(FileNotFoundError):
            temp.unlink()


def fitting_name(stem: str, suffix: str, limit: int = NAME_MAX) -> str:
    """`stem + suffix`, or, when that is longer than a file name may be (`limit` bytes), the
    stem cut and followed by `~` and 8 hex digits of its hash (two long names stay two)."""
    import hashlib

    name = stem + suffix
    if len(os.fsencode(name)) <= limit:
        return name
    tag = "~" + hashlib.sha256(os.fsencode(stem)).hexdigest()[:8]
    room = limit - len(os.fsencode(tag + suffix))
    cut = os.fsencode(stem)[:room].decode("utf-8", "ignore")  # whole characters
    return cut + tag + suffix


def failure(path: Target, exc: OSError, doing: str) -> OutputError:
    """An OSError on an output as one line: what was done, to which path, and why."""
    text = os.fspath(path)
    if exc.errno == errno.ENAMETOOLONG:
        return OutputError(name_too_long(text))
    return OutputError(f"{text}: {doing} ({exc.strerror or exc})")


def name_too_long(path: str) -> str:
    """The message for a path the file system refuses as too long, the path shortened."""
    longest = max((len(os.fsencode(p)) for p in Path(path).parts), default=0)
    shown = path if len(path) <= 80 else f"{path[:40]}...{path[-30:]}"
    limit = _name_max(path)
    return (
        f"{shown}: the name is too long for the file system (a part of {longest} bytes; "
        f"a file name may hold {limit} bytes, a path {_PATH_MAX})"
    )


_PATH_MAX = 4096


def _name_max(path: str) -> int:
    for folder in (Path(path).parent, *Path(path).parents, Path(".")):
        with suppress(OSError, ValueError):
            if folder.is_dir():
                return os.pathconf(folder, "PC_NAME_MAX")
    return NAME_MAX


@contextmanager
def _streaming(target: str) -> Iterator[Path]:
    """A private temporary file, then its bytes written to the stream `target` names."""
    folder = Path(tempfile.mkdtemp(prefix="acp-trace-out-"))
    temp = folder / "output"
    try:
        yield temp
        data = temp.read_bytes() if temp.exists() else b""
        _write_stream(target, data)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_stream(target: str, data: bytes) -> None:
    fd = descriptor(target)
    try:
        if fd is not None:
            if fd in (1, 2):
                (sys.stdout if fd == 1 else sys.stderr).flush()
            _write_all(fd, data)
            return
        opened = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            _write_all(opened, data)
        finally:
            os.close(opened)
    except BrokenPipeError:
        raise  # the reader went away (`| head`): click ends the command quietly, exit 1
    except OSError as exc:
        raise failure(target, exc, "cannot write") from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def is_stream(target: Target) -> bool:
    """True when `target` is written to, not replaced: stdout, a descriptor, a character
    device or a FIFO."""
    text = os.fspath(target)
    if descriptor(text) is not None:
        return True
    status = _stat(text)
    return status is not None and (stat.S_ISCHR(status.st_mode) or stat.S_ISFIFO(status.st_mode))


def _check_descriptor(text: str, fd: int) -> None:
    import fcntl

    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        raise OutputError(f"{text}: file descriptor {fd} is not open") from None
    if flags & os.O_ACCMODE not in (os.O_WRONLY, os.O_RDWR):
        raise OutputError(f"{text}: file descriptor {fd} is not open for writing")


def _check_parent(text: str, folder: Path) -> None:
    status = _stat(str(folder), follow=True)
    if status is None:
        raise OutputError(f"{text}: the directory {folder} does not exist")
    if not stat.S_ISDIR(status.st_mode):
        raise OutputError(f"{text}: {folder} is a file, not a directory")


def _stat(text: str, *, follow: bool = False) -> os.stat_result | None:
    """The path's status, None when it does not exist (or a part of it is not a directory);
    a name the file system refuses is an OutputError."""
    try:
        return os.stat(text) if follow else os.lstat(text)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None if not follow else os.lstat(text)
        raise failure(text, exc, "cannot be examined") from exc


def _is_special(mode: int) -> bool:
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _kind(mode: int) -> str:
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "special file"
