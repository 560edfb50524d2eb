"""The trace file of a recording: where it goes, what it is called, and opening it safely.

Nothing is written through a symbolic link, and opening never blocks the agent's start:

- `-o FILE` that does not exist: created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 (a link
  planted at the name makes the open fail instead of being followed).
- `-o FILE` that is an earlier trace (or an empty file): a new file is created beside it the
  same way and renamed over it once the agent runs (`commit`), so a link planted meanwhile is
  replaced, never written through, and an agent that cannot start leaves the old trace as it
  was.
- `-o` naming a symbolic link, a directory, or a regular file that is not a trace: refused
  (`RecordError`, one line, exit 2), before the agent starts.
- `-o` naming a FIFO or a character device (`/dev/null`, `/dev/full`): written as a stream,
  opened without blocking; a FIFO that nobody reads yet is opened by the writer process
  instead, which may wait for a reader while the tap forwards.
- `--dir DIR` (or the default directory): missing directories are created 0700, the trace is
  a new file named after the start time and the agent, with O_EXCL|O_NOFOLLOW.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from contextlib import suppress

from acp_trace.errors import RecordError
from acp_trace.record.options import RecordOptions

TRACE_DIR_ENV = "ACP_TRACE_DIR"
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
STREAM = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
SNIFF_BYTES = 64 << 10


TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from datetime import datetime

# Paths are strings here (os.path), not pathlib: this module is on the path from the tap's
# start to the agent's, and pathlib brings re, fnmatch, urllib.parse and ipaddress (about
# 7 ms of the 30 that issue 34 allows over a plain relay).


class TraceTarget:
    """Where the writer writes: an open file, or a FIFO path it opens itself.

    `path` is a string (os.path); `fd` is None when the writer process opens `path` (a FIFO
    without a reader yet); `created` says it is a new file, removed again when the agent
    cannot start; `temp` is a new file beside `path`, renamed over it by `commit`.
    """

    def __init__(self, path: str, fd: int | None, created: bool, temp: str | None = None):
        self.path, self.fd, self.created, self.temp = path, fd, created, temp
        self.notice: str | None = None  # what a person should know (a world-writable folder)

    def commit(self) -> str | None:
        """Put a replacing trace in place (the agent runs); a problem, if one occurred."""
        if self.temp is None:
            return None
        try:
            os.replace(self.temp, self.path)
        except OSError as exc:
            where, self.path = self.path, self.temp
            return f"cannot replace {where} ({exc.strerror}); the trace is {self.temp}"
        self.temp = None
        return None

    def abandon(self) -> None:
        """Close and remove what was created (the agent could not start)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        for path in (self.temp, self.path if self.created else None):
            if path is not None:
                with suppress(OSError):
                    os.unlink(path)

    def open_later(self) -> int:
        """Open a FIFO for writing, waiting for its reader (the writer process does this)."""
        fd = os.open(self.path, STREAM)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "it is no longer a FIFO")
        return fd


def default_trace_dir(env: Mapping[str, str]) -> str:
    """`$XDG_STATE_HOME/acp-trace/traces`, else `~/.local/state/acp-trace/traces`."""
    state = env.get("XDG_STATE_HOME") or "~/.local/state"
    return os.path.join(os.path.expanduser(state), "acp-trace", "traces")


def trace_file_name(command: list[str], when: datetime) -> str:
    """A UTC timestamp plus the agent's name: `20261130T101106.123Z-codex-acp.jsonl`."""
    import re
    from datetime import UTC

    from acp_trace.jsonrpc import agent_name_from_command

    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", agent_name_from_command(command)).strip("._")
    return f"{stamp}-{name or 'agent'}.jsonl"


def open_trace(
    options: RecordOptions, env: Mapping[str, str], when: datetime | None = None
) -> TraceTarget:
    """Open the trace for the writer (see the module doc); RecordError when it cannot be.
    A new trace in a directory is named after `when` (default: now)."""
    if options.output is not None:
        return _output(os.path.expanduser(os.fspath(options.output)))
    folder = os.fspath(options.directory or env.get(TRACE_DIR_ENV) or default_trace_dir(env))
    folder = os.path.expanduser(folder)
    _make_private_dirs(folder)
    if when is None:
        from datetime import UTC, datetime

        when = datetime.now(UTC)
    name = trace_file_name(options.command, when)
    for attempt in range(1, 100):
        path = os.path.join(
            folder, name if attempt == 1 else f"{name.removesuffix('.jsonl')}-{attempt}.jsonl"
        )
        with suppress(FileExistsError):
            target = TraceTarget(path, _create(path), created=True)
            target.notice = _open_to_all(folder)
            return target
    raise RecordError(f"{folder}: cannot find a free name for {name}")


def _output(path: str) -> TraceTarget:
    for _attempt in range(10):  # the name may change under us: look again
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            with suppress(FileExistsError):
                return TraceTarget(path, _create(path), created=True)
            continue
        except OSError as exc:
            raise RecordError(f"{path}: cannot look at the trace ({exc.strerror})") from exc
        if stat.S_ISREG(mode):
            return _replacing(path)
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            return _stream(path)
        raise RecordError(f"{path}: expected a new file or an earlier trace for -o, {_found(mode)}")
    raise RecordError(f"{path}: the name keeps changing; cannot open the trace")


def _found(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "found a symbolic link (a trace is never written through a link)"
    if stat.S_ISDIR(mode):
        return "found a directory (--dir DIR records into a directory)"
    return "found a socket or a block device"


def _replacing(path: str) -> TraceTarget:
    if not _is_trace(path):
        raise RecordError(
            f"{path}: expected an earlier trace to replace, found a file that is not one"
            " (its first line is no acp-trace header); it is left as it is"
        )
    folder, name = os.path.split(path)
    for _attempt in range(100):
        temp = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
        with suppress(FileExistsError):
            return TraceTarget(path, _create(temp), created=False, temp=temp)
    raise RecordError(f"{folder or '.'}: cannot find a free name for a new trace")


def _is_trace(path: str) -> bool:
    """True for an empty file or one whose first line is a v1 header or record."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the earlier trace ({exc.strerror})") from exc
    try:
        head = os.read(fd, SNIFF_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b"-"
    finally:
        os.close(fd)
    first = head.split(b"\n", 1)[0].strip()
    if not head.strip():
        return True
    if first.startswith(b'{"acp_trace":'):
        return True
    from acp_trace.jsonrpc import loads

    try:
        value = loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and ("acp_trace" in value or {"seq", "src"} <= value.keys())


def _stream(path: str) -> TraceTarget:
    try:
        fd = os.open(path, STREAM | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO without a reader: the writer waits for one
            return TraceTarget(path, None, created=False)
        raise RecordError(f"{path}: cannot open the trace ({exc.strerror})") from exc
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        os.close(fd)
        raise RecordError(f"{path}: the name changed while the trace was opened")
    os.set_blocking(fd, True)
    return TraceTarget(path, fd, created=False)


def _create(path: str) -> int:
    try:
        fd = os.open(path, NEW, 0o600)
    except FileExistsError:
        raise
    except OSError as exc:
        raise RecordError(f"{path}: cannot create the trace ({exc.strerror or exc})") from exc
    os.fchmod(fd, 0o600)  # whatever the umask
    return fd


def _open_to_all(folder: str) -> str | None:
    """A warning when `folder` (or what a link there points to) is world-writable."""
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return None
    if not mode & stat.S_IWOTH:
        return None
    return (
        f"{folder} is writable by every user (mode {stat.S_IMODE(mode):04o}): the trace is"
        " private (0600), but others can see its name"
        + ("" if mode & stat.S_ISVTX else ", and rename or remove it")
        + "; --dir a private directory avoids that"
    )


def _make_private_dirs(folder: str) -> None:
    """Create the missing directories of `folder` with mode 0700 (existing ones are kept)."""
    missing, path = [], os.path.abspath(folder)
    while not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    try:
        for path in reversed(missing):
            with suppress(FileExistsError):
                os.mkdir(path, 0o700)
                os.chmod(path, 0o700)  # whatever the umask
    except OSError as exc:
        raise RecordError(f"{folder}: cannot create the directory ({exc.strerror})") from exc
