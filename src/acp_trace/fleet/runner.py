"""Running the partitions: a local process pool, or a Dask cluster; retries, then file by file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from acp_trace.errors import InputError, UsageError, WorkerError
from acp_trace.fleet.partition import file_size, partition
from acp_trace.fleet.result import UNWRITTEN, FleetResult, concat
from acp_trace.fleet.sources import across_partitions
from acp_trace.fleet.work import COMPUTED, Part, analyze_part
from acp_trace.trace.memory import check_memory
from acp_trace.trace.paths import Found, find_traces
from acp_trace.trace.pool import traces_named, worker_context
from acp_trace.trace.reader import check_roots
from acp_trace.trace.workers import Workers
from acp_trace.weight import DEFAULT, WeightOptions

Tables = dict[str, pl.DataFrame]
PartFn = Callable[[Part], Tables]
Outcome = Tables | BaseException
PARTS_PER_WORKER = 4  # more partitions than workers, so a slow one does not hold the rest


def run(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    partitions: int | None = None,
    fmt: str | None = None,
    marker_meta: str | None = None,
    dataset: str | os.PathLike[str] | None = None,
    retries: int = 2,
    schema: bool = True,
    tables: tuple[str, ...] | None = None,
    found: Sequence[Found] | None = None,
    analyze: PartFn = analyze_part,
    weight: WeightOptions | None = None,
) -> FleetResult:
    """Analyze traces partition by partition on a local pool (`workers` processes, default the
    cores) or on Dask (`client`, or a `scheduler` address to connect to); see the package doc.

    InputError as `analyze(paths)` raises it (an explicit file that is no trace, an argument
    that yields none); a partition that fails is retried `retries` times, then run file by
    file, and the files that still fail are listed in `failed`.
    """
    unknown = sorted(set(tables or ()) - set(COMPUTED))
    if unknown:
        raise UsageError(f"tables={unknown}: expected some of {', '.join(COMPUTED)}")
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found = list(found) if found is not None else find_traces(paths)
    executor = _executor(workers, scheduler, client)
    count = partitions or max(1, executor.workers * PARTS_PER_WORKER)
    target = None if dataset is None else os.fspath(dataset)
    runs = partition(found, count)
    if scheduler is None and client is None and runs:
        # this machine's limit, before any partition is read: each worker needs what one
        # process needs for its partition, so the largest decides
        largest = max(runs, key=lambda run_: sum(file_size(f) for f in run_))
        check_memory(
            largest, f"the largest of {len(runs)} partitions, each read whole by one worker, "
        )
    parts = [
        Part(
            i,
            tuple(run_),
            fmt,
            marker_meta,
            target,
            schema,
            tables or Part.tables,
            DEFAULT if weight is None else weight,
        )
        for i, run_ in enumerate(runs)
    ]
    try:
        outcomes = executor.map(analyze, parts, retries)
        results, failed = _settle(executor, analyze, parts, outcomes, retries)
    finally:
        executor.close()
    if not results:
        first = f"{failed[0][0]}: {failed[0][1]}" if failed else "no partition"
        raise InputError(f"no trace could be analyzed ({len(failed)} failed; first: {first})")
    out = concat(results)
    check_roots(found, out["skipped"])
    if target is None and len(parts) > 1:  # a dataset's rows look in their own trace only
        out = across_partitions(out, found, fmt=fmt, marker_meta=marker_meta, weight=weight)
    return FleetResult(
        replays=out["replays"],
        all_findings=out["findings"],
        turns=out["turns"],
        requests=out["requests"],
        trace_table=out["traces"],
        skipped=out["skipped"],
        untimed_table=out["untimed"],
        failed=pl.DataFrame(
            failed, schema={"trace": pl.String, "problem": pl.String}, orient="row"
        ),
        partitions=len(parts),
        losses=out["losses"],
        written=_written(results),
        unwritten=_unwritten(results),
    )


def _settle(
    executor: _Executor, fn: PartFn, parts: list[Part], outcomes: list[Outcome], retries: int
) -> tuple[list[Tables], list[tuple[str, str]]]:
    """The tables of every partition in order; a failed partition is run again file by file."""
    results: list[Tables] = []
    failed: list[tuple[str, str]] = []
    for part, outcome in zip(parts, outcomes, strict=True):
        if not isinstance(outcome, BaseException):
            results.append(outcome)
            continue
        singles = [replace(part, found=(f,)) for f in part.found]
        for single, again in zip(singles, executor.map(fn, singles, retries), strict=True):
            if isinstance(again, BaseException):
                failed.append((str(single.found[0].path), _describe(again)))
            else:
                results.append(again)
    return results, failed


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


def _written(results: list[Tables]) -> dict[str, int]:
    out: dict[str, int] = {}
    for tables in results:
        if "written" in tables:
            for table, rows in tables["written"].iter_rows():
                out[table] = out.get(table, 0) + rows
    return out


def _unwritten(results: list[Tables]) -> pl.DataFrame:
    """The traces a worker analyzed but could not write into the dataset."""
    parts = [tables["unwritten"] for tables in results if "unwritten" in tables]
    return pl.concat(parts) if parts else pl.DataFrame(schema=UNWRITTEN)


# ---------------------------------------------------------------- executors


class _Executor:
    """Runs a function over parts; `map` gives each part's tables or the exception it ended
    with (InputError is raised at once: it is the user's input, not a failure)."""

    workers: int = 1

    def close(self) -> None:
        """Release what the executor made (a Dask client it connected itself)."""

    def map(self, fn: PartFn, parts: Sequence[Part], retries: int) -> list[Outcome]:
        raise NotImplementedError


class _LocalPool(_Executor):
    """Processes of `trace.workers`, forked while that is safe (no polars thread runs yet:
    the CLI), else started by a fork server that has imported the analyzer. A partition
    whose worker dies runs again once in a new process (a dead worker costs its own
    partition only); a second death is a WorkerError naming the traces. Leaving early
    (Ctrl-C, SIGTERM, an input error) kills the workers at once."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def map(self, fn: PartFn, parts: Sequence[Part], retries: int) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        tries = dict.fromkeys(range(len(parts)), 0)
        with Workers(
            fn,
            self.workers,
            lambda: worker_context(("acp_trace.fleet.work",)),
            describe=_describe_part,
        ) as pool:
            index = {pool.submit(part): i for i, part in enumerate(parts)}
            for task, (ok, value) in pool.results():
                i = index.pop(task)
                if ok:
                    outcomes[i] = value
                    continue
                if isinstance(value, InputError):
                    raise value
                tries[i] += 1
                if tries[i] > retries or isinstance(value, WorkerError):  # died twice
                    outcomes[i] = value
                else:
                    index[pool.submit(parts[i])] = i
        return [outcomes[i] for i in range(len(parts))]


def _describe_part(part: Part) -> str:
    return traces_named([str(f.path) for f in part.found])


class _Dask(_Executor):
    """A dask.distributed Client: tasks retried by Dask, results gathered in order."""

    def __init__(self, client: Any, *, owned: bool = False) -> None:
        self.client = client
        self.owned = owned
        self.workers = max(1, len(client.scheduler_info().get("workers", {})))

    def close(self) -> None:
        if self.owned:
            self.client.close()

    def map(self, fn: PartFn, parts: Sequence[Part], retries: int) -> list[Outcome]:
        futures = [self.client.submit(fn, p, retries=retries, pure=False) for p in parts]
        outcomes: list[Outcome] = []
        for future in futures:
            try:
                outcomes.append(future.result())
            except InputError:
                raise
            except Exception as exc:  # KilledWorker, or the task's own error after retries
                outcomes.append(exc)
        return outcomes


def _executor(workers: int | None, scheduler: str | None, client: Any) -> _Executor:
    if client is not None:
        return _Dask(client)
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise UsageError(
                "--scheduler needs Dask: pip install -e '.[fleet]' in the acp-trace clone"
            ) from exc
        try:
            return _Dask(Client(scheduler, timeout="10s"), owned=True)  # type: ignore[no-untyped-call]
        except OSError as exc:
            raise InputError(
                f"--scheduler {scheduler}: cannot reach the scheduler ({exc})"
            ) from exc
    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: expected 1 or more")
    return _LocalPool(workers or os.cpu_count() or 1)
