"""Writing outputs safely: never through a symlink planted at the target, trace contents private.

Every file acp-trace writes (reports, charts, exports, imported traces) goes through here:

- a file is written to a temporary file in the target's directory (created exclusively, so
  nothing planted there is followed) and renamed over the target: a symlink at the target is
  replaced, never written through, and a reader never sees half a file;
- every file is private, mode 0600 whatever the umask: each holds trace contents, or names
  agents, sessions and timings (a chart), and none lands world-readable;
- an output directory (`report -o DIR`) is created with its missing parents, mode 0700; a
  file's directory must exist (`plot -o missing/x.png` is refused);
- a target of the wrong kind (a directory where a file goes, a file where a directory goes) and
  any OS error are one `OutputError` that names the path.

The recorder's trace file has its own rules (`acp_trace.record.trace_file`: O_NOFOLLOW|O_EXCL).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from acp_trace.errors import OutputError

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def wants_directory(target: str | os.PathLike[str]) -> bool:
    """True when `-o` names a directory: it exists as one, or it ends with a `/`."""
    text = os.fspath(target)
    return text.endswith(("/", os.sep)) or Path(text).is_dir()


def output_dir(target: str | os.PathLike[str]) -> Path:
    """The directory `target`, created (with its missing parents) when it does not exist.

    New directories are 0700; an existing one is used as it is. A path that
    exists and is not a directory is refused.
    """
    path = Path(target)
    check_directory_target(target)
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        for folder in reversed(missing):
            with suppress(FileExistsError):
                folder.mkdir(mode=PRIVATE_DIR)
                os.chmod(folder, PRIVATE_DIR)  # whatever the umask
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the directory ({_why(exc)})") from exc
    if not path.is_dir():
        raise OutputError(f"{path}: expected a directory for the output")
    return path


def check_directory_target(target: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a `-o` for a directory that names something else (a file)."""
    path = Path(target)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{os.fspath(target)}: expected a directory for the output, found a file")


def check_file_target(target: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a `-o` for a file that names a directory (or ends in `/`), a
    device or FIFO, or whose directory does not exist."""
    _check_file_target(os.fspath(target))
    folder = Path(target).parent
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{target}: {folder} is a file, not a directory")
    if not folder.is_dir():
        raise OutputError(f"{target}: the directory {folder} does not exist")


def write_file(target: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write `data` to `target` atomically (temporary file, then rename); see the module doc."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(target) as temp:
        try:
            with open(temp, "wb") as handle:
                handle.write(payload)
        except OSError as exc:
            raise OutputError(f"{target}: cannot write ({_why(exc)})") from exc
    return Path(target)


@contextmanager
def replacing(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside `target` for a library to write (a figure, a Parquet file);
    on success it gets its mode and is renamed over `target`, on failure it is removed."""
    path = Path(target)
    check_file_target(target)
    folder = path.parent
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write in {folder} ({_why(exc)})") from exc
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        os.chmod(temp, PRIVATE_FILE)
        os.replace(temp, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({_why(exc)})") from exc
    finally:
        with suppress(FileNotFoundError):
            temp.unlink()


def _check_file_target(path: str) -> None:
    if path.endswith(("/", os.sep)):
        raise OutputError(f"{path}: expected a file name for the output, found a directory name")
    with suppress(FileNotFoundError, NotADirectoryError):
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(mode):
            raise OutputError(f"{path}: expected a file for the output, found a directory")
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise OutputError(f"{path}: expected a regular file for the output")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
