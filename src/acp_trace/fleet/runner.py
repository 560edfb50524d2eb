"""Running the partitions: a local process pool, or a Dask cluster; retries, then file by file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import Any

import polars as pl

from acp_trace.errors import InputError, UsageError
from acp_trace.fleet.partition import partition
from acp_trace.fleet.result import FleetResult, concat
from acp_trace.fleet.work import COMPUTED, Part, analyze_part
from acp_trace.trace.paths import Found, find_traces
from acp_trace.trace.pool import (
    die_with_parent,
    finished,
    stop_now,
    worker_context,
    workers_parent,
)
from acp_trace.trace.reader import check_roots

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
    parts = [
        Part(i, tuple(run_), fmt, marker_meta, target, schema, tables or Part.tables)
        for i, run_ in enumerate(partition(found, count))
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
    """A pool of processes, forked while that is safe (no polars thread runs yet: the CLI),
    else started by a fork server that has imported the analyzer (`trace.pool.worker_context`).
    A worker that dies breaks the pool and fails every task in flight, so after a break the
    tasks left run one at a time, each in a pool of its own: a crash is then the crashing
    task's alone."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def map(self, fn: PartFn, parts: Sequence[Part], retries: int) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        tries = dict.fromkeys(range(len(parts)), 0)
        pending, isolate = list(range(len(parts))), False
        while pending:
            groups = [[i] for i in pending] if isolate else [pending]
            pending = []
            for group in groups:
                broke = self._round(fn, parts, group, isolate, outcomes, tries, retries, pending)
                isolate = isolate or broke
        return [outcomes[i] for i in range(len(parts))]

    def _round(
        self,
        fn: PartFn,
        parts: Sequence[Part],
        group: list[int],
        isolate: bool,
        outcomes: dict[int, Outcome],
        tries: dict[int, int],
        retries: int,
        pending: list[int],
    ) -> bool:
        """Run `group` in one pool; failures are retried through `pending`. True on a break.
        Leaving early (Ctrl-C, SIGTERM, an input error) kills the workers at once: the
        partitions under way are not awaited."""
        size = 1 if isolate else self.workers
        context = worker_context(("acp_trace.fleet.work",))
        parent = workers_parent(context)
        with ProcessPoolExecutor(
            size, mp_context=context, initializer=die_with_parent, initargs=(parent,)
        ) as pool:
            try:
                futures = {pool.submit(fn, parts[i]): i for i in group}
                return self._collect(futures, isolate, outcomes, tries, retries, pending)
            except BaseException:
                stop_now(pool)
                raise

    @staticmethod
    def _collect(
        futures: dict[Future[Tables], int],
        isolate: bool,
        outcomes: dict[int, Outcome],
        tries: dict[int, int],
        retries: int,
        pending: list[int],
    ) -> bool:
        """Each task's outcome as it completes; failures go to `pending`. True on a break."""
        broke = False
        for future in _as_completed(futures):
            i = futures[future]
            try:
                outcomes[i] = future.result()
                continue
            except InputError:
                raise
            except BrokenProcessPool as exc:
                broke = True
                if not isolate:  # any task in flight may have been the one: not counted
                    pending.append(i)
                    continue
                error: Exception = exc
            except Exception as exc:  # the task's own error: counted
                error = exc
            tries[i] += 1
            if tries[i] > retries:
                outcomes[i] = error
            else:
                pending.append(i)
        return broke


def _as_completed(futures: Iterable[Future[Tables]]) -> Iterator[Future[Tables]]:
    """The futures as they complete, waiting as `trace.pool.finished` does (Ctrl-C is
    handled at once, whichever thread the kernel gave it to)."""
    pending = set(futures)
    while pending:
        done = finished(pending)
        pending -= done
        yield from done


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
