"""Reading traces of format v1 (docs/trace-format.md); trace/format.py writes them.

The reader turns one or more trace files into one flat polars DataFrame with a row per
message (a batch line gives one row per element), per text line, per tap event, per header
and per damaged line. Nothing is dropped silently: damaged lines become `malformed` rows.
Each file is read by `trace.native` in blocks at native speed (`trace.blocks`), every line
that path cannot read exactly by the line reader (`trace.lines`); with `workers`, byte ranges
of large files and groups of small ones are read in a process pool (`trace.pool`), with the
same result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from acp_trace.errors import InputError
from acp_trace.jsonrpc import loads
from acp_trace.trace.lines import COLUMNS, SCHEMA, Table
from acp_trace.trace.paths import Found, find_traces

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "check_roots",
    "headers",
    "read_found",
    "read_trace",
    "skipped_inputs",
]


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
    records = read_found(found, fmt=fmt, progress=progress, workers=workers)
    check_roots(found, skipped_inputs(records))
    return records


def read_found(
    found: Sequence[Found],
    *,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
) -> pl.DataFrame:
    """Read the files `find_traces` found (or a share of them: the fleet reads a partition per
    worker): one records table, a `skipped` row for each candidate that is no trace.
    InputError for an explicit file that is no trace; `check_roots` does the rest."""
    from acp_trace.trace import pool  # the process pool
    from acp_trace.trace.memory import check_memory

    check_memory(found)  # before anything is read
    table = Table()
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
            if progress is not None:
                progress(done, len(found))
    finally:
        results.close()  # stops the pool, if any, at once
    frames = table.done()
    return pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=SCHEMA)


def check_roots(found: Sequence[Found], skipped: pl.DataFrame) -> None:
    """InputError for the first argument all of whose files were skipped (`skipped`: the
    `skipped_inputs` table of what was read)."""
    problems = dict(skipped.select("trace", "problem").iter_rows())
    by_root: dict[str, list[str]] = {}
    for item in found:
        by_root.setdefault(item.root, []).append(str(item.path))
    for root, files in by_root.items():
        if all(f in problems for f in files):
            rows = pl.DataFrame({"trace": files, "problem": [problems[f] for f in files]})
            raise InputError(_nothing_read(root, rows))


def skipped_inputs(records: pl.DataFrame) -> pl.DataFrame:
    """The files passed over while reading (`trace`, `problem`), in order."""
    skipped = records.filter(pl.col("kind") == "skipped")
    return skipped.select("trace", pl.col("event").alias("problem"))


def _nothing_read(root: str, problems: pl.DataFrame) -> str:
    skipped = problems.rows()
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
