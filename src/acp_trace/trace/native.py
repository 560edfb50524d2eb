"""Reading one native trace file (or the bytes of a converted capture): its byte ranges in
blocks of whole lines, the header, a cut last line, several traces in one file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl

from acp_trace.errors import InputError
from acp_trace.jsonrpc import loads
from acp_trace.trace.blocks import read_block
from acp_trace.trace.format import FORMAT_VERSION
from acp_trace.trace.lines import Table, parse_line, record_problem

BLOCK_BYTES = 4 << 20  # lines are decoded this many bytes at a time


def read_or_skip(path: Path, fmt: str | None, explicit: bool) -> tuple[Table, InputError | None]:
    """The rows of one file, or (when it cannot be read or is no trace) the InputError that
    says why, with the `skipped` row of a file not named itself."""
    try:
        return read_file(path, fmt), None
    except InputError as exc:
        error = exc
    except MemoryError:
        error = InputError(out_of_memory(path))
    table = Table()
    if not explicit:
        reason = str(error).removeprefix(f"{path}: ")
        table.rows.add(trace=str(path), kind="skipped", event=reason)
    return table, error


def out_of_memory(path: Path) -> str:
    return (
        f"out of memory reading {path} ({_size(path) / 1e6:.0f} MB); try fewer or smaller "
        "traces at once, or a machine with more memory (the analyzer needs about twice the "
        "size of its input)"
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_file(path: Path, fmt: str | None) -> Table:
    """The rows of one file (several traces when it holds several); InputError when the file
    cannot be read or is no trace."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    with handle:
        first = handle.readline()
        if fmt in (None, "acp-trace") and is_native(first):
            table = Table()
            _lines, later = read_range(
                handle, 0, os.fstat(handle.fileno()).st_size, str(path), table
            )
            if not later:
                return table
            handle.seek(0)
            return read_segments(handle.read(), str(path), later)
        handle.seek(0)
        content = handle.read()
    from acp_trace.trace import importers  # imported late: only other formats need it

    table = Table()
    for name, lines in importers.convert(path, content, fmt):
        table.extend(read_native(b"".join(lines), name))
    return table


def is_native(line: bytes) -> bool:
    """A v1 header, or (a trace written by hand without one) a valid v1 record."""
    try:
        head = loads(line)
    except ValueError:
        return False
    if isinstance(head, dict) and head.get("acp_trace") == FORMAT_VERSION:
        return True
    return record_problem(head) is None


def read_native(data: bytes, trace: str) -> Table:
    """The rows of a whole native trace; a header after line 1 starts the next trace of the
    file (`TRACE#1`, `TRACE#2`, ...)."""
    table = Table()
    _lines, later = read_range(data, 0, len(data), trace, table)
    return read_segments(data, trace, later) if later else table


Source = bytes | BinaryIO  # the bytes of a trace, or its file (read a block at a time)


def read_range(
    source: Source, start: int, end: int, trace: str, table: Table
) -> tuple[int, list[int]]:
    """Add to `table` the rows of the lines of `source[start:end]` (from a line's start to a
    line's end or the end of the data), numbered from 1; its first line may be a header only
    when `start` is 0. Returns the number of lines, and the lines that are v1 headers (after
    the first: several traces stand in the file, see `read_segments`)."""
    headers = table.rows.headers
    known = len(headers)
    number = 1
    for run in _runs(source, start, end):
        if number == 1 and start == 0:  # the trace's first line: its header
            stop = run.find(b"\n") + 1 or len(run)
            parse_line(table.rows, trace, 1, run[:stop], header_ok=True)
            number, run = 2, run[stop:]
        whole = run if run.endswith(b"\n") else run[: run.rfind(b"\n") + 1]
        if whole:
            number += read_block(table, whole, trace, number)
        if len(whole) < len(run):  # the last line, cut
            parse_line(table.rows, trace, number, run[len(whole) :], header_ok=False)
            number += 1
    later = headers[known:]
    del headers[known:]
    return number - 1, later


def _runs(source: Source, start: int, end: int) -> Iterator[bytes]:
    """`source[start:end]` in runs of whole lines of about BLOCK_BYTES (read as they are
    needed: the file is never held whole); the last run may end without a newline."""
    pos, carry = start, b""
    while pos < end:
        size = min(BLOCK_BYTES, end - pos)
        if isinstance(source, bytes):
            chunk = source[pos : pos + size]
        else:
            chunk = os.pread(source.fileno(), size, pos)
        if not chunk:  # the file is shorter than it was
            break
        pos += len(chunk)
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        carry = data[cut:]
    if carry:
        yield carry


def read_segments(data: bytes, trace: str, starts: list[int]) -> Table:
    """A file of several traces: the header at each line of `starts` begins the next one; the
    traces are named `TRACE#1`, `TRACE#2`, ... and keep the file's line numbers."""
    table = Table()
    bounds = [0, *_line_offsets(data, sorted(starts)), len(data)]
    first_lines = [1, *sorted(starts)]
    spans = zip(bounds[:-1], bounds[1:], first_lines, strict=True)
    for number, (start, end, line) in enumerate(spans, 1):
        name = f"{trace}#{number}"
        stop = data.find(b"\n", start, end)
        head_end = end if stop < 0 else stop + 1
        parse_line(table.rows, name, line, data[start:head_end], header_ok=True)
        if head_end < end:
            rest = Table()
            read_range(data, head_end, end, name, rest)
            for frame in rest.done():
                table.add_frame(frame.with_columns(pl.col("line") + line))
    return table


def _line_offsets(data: bytes, lines: list[int]) -> list[int]:
    """The byte offsets where the given lines (numbered from 1, increasing) start."""
    out, pos, number = [], 0, 1
    for wanted in lines:
        while number < wanted:
            pos = data.find(b"\n", pos) + 1
            number += 1
        out.append(pos)
    return out
