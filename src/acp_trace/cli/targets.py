"""Every command's outputs, checked before any input is read (docs/outputs.md): the kind of
each `-o` (`acp_trace.files`), that none of them is one of the command's inputs (the same
file by inode, also a file found under a directory or by a glob), that no output folder is or
holds an input, and that nothing is replaced but what the same command made
(`acp_trace.owned`). The notes a command prints
after writing go to stdout, unless stdout is the output."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
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


def file_output(
    output: str,
    traces: Iterable[str],
    writer: str | None = None,
    made: Callable[[Path], bool] | None = None,
) -> str:
    """A `-o` for one file: its kind checked, that it is no input, and, for a `writer` that
    can tell its own files (`made`), that an existing file there is one it made."""
    from acp_trace.owned import check_file

    check_file_target(output)
    guard([output], traces)
    if writer is not None and made is not None:
        check_file(output, writer, made)
    return output


def directory_output(
    output: str, names: Iterable[str], traces: Iterable[str], writer: str, *, whole: bool = False
) -> Path:
    """A `-o` for a directory of `names` that `writer` (a command) writes: its kind checked,
    that it neither is nor holds an input, and that it replaces nothing another command or a
    person made (`acp_trace.owned`: with `whole`, the folder is replaced as a whole)."""
    from acp_trace.owned import check_folder

    check_directory_target(output)
    traces = list(traces)
    wanted = list(names)
    sources: list[Target] = [*traces, *(input_files(traces) if traces else [])]
    check_folder(output, writer, wanted, sources, whole=whole)
    guard([Path(output) / name for name in wanted], traces)  # a hard link to an input, too
    return Path(output)


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
