"""Every command's outputs, checked before any input is read (docs/outputs.md): the kind of
each `-o` (`acp_trace.files`), and that none of them is one of the command's inputs (the same
file by inode, also a file found under a directory or by a glob). The notes a command prints
after writing go to stdout, unless stdout is the output."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from acp_trace.errors import UsageError
from acp_trace.files import (
    Target,
    check_directory_target,
    check_file_target,
    check_not_inputs,
    descriptor,
    to_stdout,
)


def input_files(traces: Iterable[str]) -> list[Path]:
    """The files the command will read (InputError for a name that names nothing)."""
    from acp_trace.trace.paths import find_traces

    return [found.path for found in find_traces(traces)]


def guard(outputs: Iterable[Target], traces: Iterable[str]) -> None:
    """Refuse an output that is one of the inputs, before anything is read."""
    wanted = list(outputs)
    if wanted:
        check_not_inputs(wanted, input_files(traces))


def file_output(output: str, traces: Iterable[str]) -> str:
    """A `-o` for one file: its kind checked, and that it is no input."""
    check_file_target(output)
    guard([output], traces)
    return output


def directory_output(output: str, names: Iterable[str], traces: Iterable[str]) -> Path:
    """A `-o` for a directory of `names`: its kind checked, and none of the files it will
    hold is one of the inputs."""
    check_directory_target(output)
    folder = Path(output)
    guard([folder / name for name in names], traces)
    return folder


def binary_output(output: str, what: str) -> None:
    """Refuse a binary output (a PNG) onto a terminal: it would print as garbage."""
    fd = descriptor(output)
    if fd is not None and _isatty(fd):
        raise UsageError(f"-o {output}: that is a terminal; {what} goes to a file or a pipe")


def note(text: str, *outputs: Target | None) -> None:
    """A note after writing ("wrote FILE"): on stdout, or left out when stdout is one of the
    outputs (it would land inside the data)."""
    from acp_trace.cli.terminal import emit

    if not any(to_stdout(o) for o in outputs):
        emit(text)


def side_note(text: str, *outputs: Target | None) -> None:
    """A line of facts (an import's counts): on stdout, or on stderr when stdout is one of
    the outputs."""
    from acp_trace.cli.terminal import emit, say

    if any(to_stdout(o) for o in outputs):
        say(text.rstrip("\n"))
    else:
        emit(text)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd) or (fd == 1 and sys.stdout.isatty())
    except OSError:
        return False
