"""The trace file of a recording: where it goes, what it is called, created private (0600)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from acp_trace.errors import RecordError
from acp_trace.jsonrpc import agent_name_from_command
from acp_trace.record.options import RecordOptions

TRACE_DIR_ENV = "ACP_TRACE_DIR"


def default_trace_dir(env: Mapping[str, str]) -> Path:
    """`$XDG_STATE_HOME/acp-trace/traces`, else `~/.local/state/acp-trace/traces`."""
    state = env.get("XDG_STATE_HOME") or "~/.local/state"
    return Path(state).expanduser() / "acp-trace" / "traces"


def trace_file_name(command: list[str], when: datetime) -> str:
    """A UTC timestamp plus the agent's name: `20261130T101106.123Z-codex-acp.jsonl`."""
    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", agent_name_from_command(command)).strip("._")
    return f"{stamp}-{name or 'agent'}.jsonl"


def create_trace(
    options: RecordOptions, env: Mapping[str, str], when: datetime
) -> tuple[Path, int, bool]:
    """Open the trace for writing (mode 0600): its path, fd, and whether it was created.

    An existing `-o` file is emptied only when the writer starts, after the agent started.
    """
    if options.output is not None:
        path = options.output.expanduser()
        existed = path.exists()
        return path, _open_trace(path, 0), not existed
    folder = options.directory or Path(env.get(TRACE_DIR_ENV) or default_trace_dir(env))
    folder = folder.expanduser()
    _make_private_dirs(folder)
    name = trace_file_name(options.command, when)
    for attempt in range(1, 100):
        path = folder / (name if attempt == 1 else f"{name.removesuffix('.jsonl')}-{attempt}.jsonl")
        with suppress(FileExistsError):
            return path, _open_trace(path, os.O_EXCL), True
    raise RecordError(f"{folder}: cannot find a free name for {name}")


def _open_trace(path: Path, flag: int) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | flag, 0o600)
    except FileExistsError:
        raise
    except OSError as exc:
        raise RecordError(f"{path}: cannot create the trace ({exc.strerror or exc})") from exc
    if stat.S_ISREG(os.fstat(fd).st_mode):  # never chmod a device such as /dev/full
        os.fchmod(fd, 0o600)
    return fd


def _make_private_dirs(folder: Path) -> None:
    """Create the missing directories of `folder` with mode 0700 (existing ones are kept)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        for path in reversed(missing):
            with suppress(FileExistsError):
                path.mkdir(mode=0o700)
                os.chmod(path, 0o700)  # whatever the umask
    except OSError as exc:
        raise RecordError(f"{folder}: cannot create the directory ({exc.strerror})") from exc
