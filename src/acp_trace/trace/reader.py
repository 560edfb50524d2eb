"""Reading traces of format v1 (docs/trace-format.md); trace/format.py writes them.

The reader turns one or more trace files into one flat polars DataFrame with a row per
message (a batch line gives one row per element), per text line, per tap event, per header
and per damaged line. Nothing is dropped silently: damaged lines become `malformed` rows.
Lines are read in blocks at native speed (`trace.blocks`), every line that path cannot read
exactly by the line reader (`trace.lines`); with `workers`, byte ranges of large files and
groups of small ones are read in a process pool (`trace.pool`), with the same result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from acp_trace.errors import InputError
from acp_trace.jsonrpc import loads
from acp_trace.trace.blocks import read_block
from acp_trace.trace.format import FORMAT_VERSION
from acp_trace.trace.lines import COLUMNS, SCHEMA, Table, parse_line, record_problem
from acp_trace.trace.paths import find_traces

__all__ = ["COLUMNS", "SCHEMA", "headers", "read_trace", "skipped_inputs"]

BLOCK_BYTES = 4 << 20  # lines are decoded this many bytes at a time


def read_trace(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
) -> pl.DataFrame:
    """Read traces (files, directories, globs) into one records DataFrame (see COLUMNS).

    Other capture formats (bare JSON-RPC, Zed's log, conductor, inspector) are detected
    from their content and converted on the fly. Damaged lines and a cut last line become
    rows of kind `malformed` with their line number; they never stop the reading. A file
    found in a directory (or by a glob) that is not a trace becomes one row of kind `skipped`
    that says why (`skipped_inputs` lists them); a file named itself that is not a trace, or
    an argument that yields no trace at all, raises InputError. A file holding several traces
    one after another (each from its header on) is read as `FILE#1`, `FILE#2`, ...
    `fmt` names the input format instead of detecting it (`acp-trace`, or an importer's name).
    `workers` reads in that many processes (None: one per core when the input is large
    enough to gain from it); the table is the same, row for row, as with one.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found = find_traces(paths)
    from acp_trace.trace import pool  # the process pool and the memory check

    pool.check_memory(found)
    table = Table()
    read_from = {item.root: 0 for item in found}
    results = pool.read_all(found, fmt, pool.choose_workers(found, workers))
    try:
        for done, (item, (part, error)) in enumerate(zip(found, results, strict=True), 1):
            if error is not None and item.explicit:
                raise error
            if isinstance(part, Table):
                table.extend(part)
            else:
                for frame in part:
                    table.add_frame(frame)
            read_from[item.root] += error is None
            if progress is not None:
                progress(done, len(found))
    finally:
        results.close()  # stops the pool, if any, at once
    frames = table.done()
    records = pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=SCHEMA)
    for root, count in read_from.items():
        if count == 0:
            raise InputError(_nothing_read(root, records))
    return records


def skipped_inputs(records: pl.DataFrame) -> pl.DataFrame:
    """The files passed over while reading (`trace`, `problem`), in order."""
    skipped = records.filter(pl.col("kind") == "skipped")
    return skipped.select("trace", pl.col("event").alias("problem"))


def read_or_skip(path: Path, fmt: str | None, explicit: bool) -> tuple[Table, InputError | None]:
    """The rows of one file, or (when it cannot be read or is no trace) the InputError that
    says why, with the `skipped` row of a file not named itself."""
    try:
        return read_file(path, fmt), None
    except InputError as exc:
        error = exc
    except MemoryError:
        from acp_trace.trace.pool import out_of_memory

        error = InputError(out_of_memory(path))
    table = Table()
    if not explicit:
        reason = str(error).removeprefix(f"{path}: ")
        table.rows.add(trace=str(path), kind="skipped", event=reason)
    return table, error


def _nothing_read(root: str, table: pl.DataFrame) -> str:
    skipped = skipped_inputs(table).rows()
    shown = "; ".join(f"{Path(t).name}: {p}" for t, p in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    files = "1 file" if len(skipped) == 1 else f"{len(skipped)} files"
    return f"{root}: no trace among its {files} ({shown}{more})"


def headers(records: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Each trace's header fields (an empty dict when the trace has no header)."""
    out: dict[str, dict[str, Any]] = {t: {} for t in records["trace"].unique(maintain_order=True)}
    for trace, text in records.filter(pl.col("kind") == "header").select("trace", "text").rows():
        out[trace] = loads(text)
    return out


# ---------------------------------------------------------------- one file


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
