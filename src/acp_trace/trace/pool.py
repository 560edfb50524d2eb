"""Reading many traces, or one large one, in a pool of processes (the memory check before it:
`trace.memory`).

The work is cut into tasks in file order: byte ranges of about RANGE_BYTES of a large native
trace (each from a line's start to a line's end), and groups of whole small files. Each task
runs the same reader (`native.read_range`, `native.read_file`) in a worker process, which
hands its rows back as Arrow IPC in a file of shared memory (`trace.handoff`); the parent
numbers the lines of each range from the lines of the ranges before it. A file whose ranges
find a header after its first line (several traces in one file) is read again whole. So the
table is the one a single process reads, row for row and in the same order.

Workers are forked when forking is safe (Linux, and no thread runs in this process but the
allocator's and polars' idle cleaner: a forked child inherits no lock held by a thread), and
started by a fork server otherwise (about 0.3 s more: each imports polars). They run in
`trace.workers`: a worker that dies costs its task only, which runs again once in a new
process (then WorkerError), and Ctrl-C or SIGTERM kills them all at once.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from acp_trace.errors import InputError
from acp_trace.trace.handoff import handoff_directory, pack, unpack
from acp_trace.trace.paths import Found
from acp_trace.trace.workers import Workers

if TYPE_CHECKING:
    from acp_trace.trace.lines import Table

RANGE_BYTES = 32 << 20  # a task reads about this many bytes
GROUP_FILES = 512  # and at most this many small files
AUTO_MIN_BYTES = 48 << 20  # below this, workers=None reads in this process
Result = tuple["Table | list[pl.DataFrame]", InputError | None]
Task = tuple[str, Any]


def choose_workers(found: Sequence[Found], workers: int | None) -> int:
    """How many processes read: `workers`, or (None) one per usable core when the input is
    large enough for the pool to gain more than it costs to start."""
    if workers is not None:
        return max(1, workers)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    total = sum(_size(item.path) for item in found)
    return 1 if total < AUTO_MIN_BYTES else max(1, min(cores or 1, total // RANGE_BYTES + 1))


def read_all(found: Sequence[Found], fmt: str | None, workers: int) -> Generator[Result]:
    """For each found file, in order, its rows and the InputError that says why it is no trace
    (None when it is one; the rows hold the `skipped` row of a file not named itself)."""
    from acp_trace.trace.native import read_or_skip

    if workers <= 1 or len(found) == 0:
        for item in found:
            yield read_or_skip(item.path, fmt, item.explicit)
        return
    tasks, owners = _plan(found, fmt)
    with (
        handoff_directory() as directory,
        Workers(
            _run, workers, worker_context, init=_init, args=(directory,), describe=describe_task
        ) as pool,
    ):  # on the way out, whatever the reason: the workers are killed and reaped
        yield from _assemble(found, fmt, owners, _in_order(pool, tasks, 2 * workers))


def describe_task(task: Task) -> str:
    """The traces a task reads, for a message: `a.jsonl bytes 0 to 33554432`, `512 traces
    (a.jsonl to z.jsonl)`."""
    kind, args = task
    if kind == "range":
        name, start, end = args
        return f"{name} (bytes {start} to {end})"
    return traces_named([name for name, _explicit in args[0]])


def traces_named(names: Sequence[str]) -> str:
    """A list of traces in a few words: all of up to three, else the first and the last."""
    if len(names) == 1:
        return names[0]
    if len(names) <= 3:
        return f"{len(names)} traces ({', '.join(names)})"
    return f"{len(names)} traces ({names[0]} to {names[-1]}, in the order they were found)"


# ---------------------------------------------------------------- planning and assembling


def _in_order(pool: Workers, tasks: list[Task], window: int) -> Iterator[Any]:
    """The tasks' results in order, with at most `window` tasks submitted and not yet handed
    out: results that wait for the parent are bounded (each is a range's rows). A task's own
    error (a bug: a file that is no trace is a result) is raised here."""
    todo = iter(tasks)
    waiting: deque[int] = deque(pool.submit(task) for task in islice(todo, window))
    done: dict[int, Any] = {}
    while waiting:
        while waiting[0] not in done:
            for index, (ok, value) in pool.completed():
                if not ok:
                    raise value
                done[index] = value
        yield done.pop(waiting.popleft())
        following = next(todo, None)
        if following is not None:
            waiting.append(pool.submit(following))


def _plan(found: Sequence[Found], fmt: str | None) -> tuple[list[Task], list[int]]:
    """The tasks, and for each found file the number of byte ranges it is cut into (0: it is
    read whole, in a group of files)."""
    from acp_trace.trace.native import is_native

    tasks: list[Task] = []
    owners: list[int] = []
    group: list[tuple[str, bool]] = []
    group_bytes = 0
    for item in found:
        size = _size(item.path)
        if size > RANGE_BYTES and fmt in (None, "acp-trace") and is_native(_first_line(item)):
            if group:
                tasks.append(("files", (group, fmt)))
                group, group_bytes = [], 0
            ranges = _ranges(item.path, size)
            owners.append(len(ranges))
            tasks.extend(("range", (str(item.path), a, b)) for a, b in ranges)
            continue
        if group and (group_bytes + size > RANGE_BYTES or len(group) >= GROUP_FILES):
            tasks.append(("files", (group, fmt)))
            group, group_bytes = [], 0
        owners.append(0)
        group.append((str(item.path), item.explicit))
        group_bytes += size
    if group:
        tasks.append(("files", (group, fmt)))
    return tasks, owners


def _assemble(
    found: Sequence[Found], fmt: str | None, owners: list[int], results: Iterator[Any]
) -> Iterator[Result]:
    """Per file, in order, its rows from the results of its tasks (which arrive in order): a
    group of small files comes as one table, with the first file of the group."""
    from acp_trace.trace.native import read_or_skip

    errors: list[str | None] = []  # of the group of files being handed out
    for item, ranges in zip(found, owners, strict=True):
        if not ranges:
            frames: list[pl.DataFrame] = []
            if not errors:
                packed, errors = next(results)
                frames = unpack(packed)
            error = errors.pop(0)
            yield frames, None if error is None else InputError(error)
            continue
        frames, offset, several = [], 0, False
        for _ in range(ranges):  # each range's rows taken as it comes: the rest is bounded
            packed, lines, headers = next(results)
            several = several or bool(headers)
            if not several:
                frames.extend(f.with_columns(pl.col("line") + offset) for f in unpack(packed))
            offset += lines
        if several:  # several traces in the file: read again whole
            frames = []
            yield read_or_skip(item.path, fmt, item.explicit)
            continue
        yield frames, None


def _ranges(path: Path, size: int) -> list[tuple[int, int]]:
    """Byte ranges of about RANGE_BYTES, each ending just after a newline (or at the end)."""
    out, start = [], 0
    with path.open("rb") as handle:
        while start < size:
            end = _line_end(handle.fileno(), min(start + RANGE_BYTES, size) - 1, size)
            out.append((start, end))
            start = end
    return out


def _line_end(fd: int, pos: int, size: int) -> int:
    """The offset just past the first newline at or after `pos` (or the size)."""
    while pos < size:
        window = os.pread(fd, 1 << 16, pos)
        stop = window.find(b"\n")
        if stop >= 0:
            return pos + stop + 1
        if not window:
            break
        pos += len(window)
    return size


def _first_line(item: Found) -> bytes:
    with item.path.open("rb") as handle:
        return handle.readline(1 << 20)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# ---------------------------------------------------------------- the worker side


_HANDOFF: list[str | None] = [None]  # the worker's directory for its rows (`trace.handoff`)


def _init(directory: str | None) -> None:
    """A worker reads on one thread (the pool is the parallelism) and hands its rows on in
    files of `directory`."""
    os.environ["POLARS_MAX_THREADS"] = "1"
    _HANDOFF[0] = directory


def _run(task: Task) -> Any:
    from acp_trace.trace.lines import Table
    from acp_trace.trace.native import read_or_skip, read_range

    kind, args = task
    if kind == "range":
        name, start, end = args
        table = Table()
        with open(name, "rb") as handle:
            lines, headers = read_range(handle, start, end, name, table)
        return pack(table.done(), _HANDOFF[0]), lines, headers
    files, fmt = args
    table, errors = Table(), []
    for name, explicit in files:
        part, error = read_or_skip(Path(name), fmt, explicit)
        table.extend(part)
        errors.append(None if error is None else str(error))
    return pack(table.done(), _HANDOFF[0]), errors


_SAFE_THREADS = frozenset({"jemalloc_bg_thd", "polars-ooc-clea"})


def worker_context(preload: tuple[str, ...] = ("acp_trace.trace.native",)) -> Any:
    """fork where it is safe (see the module doc), else a fork server that has imported
    `preload` (its workers start without importing them again)."""
    if _fork_is_safe():
        return mp.get_context("fork")
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


def _fork_is_safe() -> bool:
    if threading.active_count() > 1 or "fork" not in mp.get_all_start_methods():
        return False
    try:
        tasks = os.listdir("/proc/self/task")
        names = [Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in tasks]
    except OSError:
        return False
    return all(n in _SAFE_THREADS for n in names[1:]) and len(names) >= 1
