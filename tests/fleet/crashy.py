"""Partition functions (and a task) that fail or kill their worker: the failure paths of
--workers and of the fleet."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from acp_trace.fleet.work import Part, analyze_part


def crash_on_marked_file(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that a partition holding a file named `crash-*` kills the process."""
    if any(f.path.name.startswith("crash-") for f in part.found):
        os._exit(7)
    return analyze_part(part)


def raise_on_marked_file(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that a partition holding a file named `crash-*` raises."""
    if any(f.path.name.startswith("crash-") for f in part.found):
        raise RuntimeError("simulated worker failure")
    return analyze_part(part)


def _first_attempt(part: Part) -> bool:
    """True the first time any worker runs a partition of this dataset (a marker beside it)."""
    assert part.dataset is not None
    marker = Path(part.dataset).parent / f"attempted-{Path(part.dataset).name}"
    try:
        marker.touch(exist_ok=False)
    except FileExistsError:
        return False
    return True


def _after_writes(count: int, act: Callable[[], None]) -> Callable[..., object]:
    """polars' write_parquet, doing `act` once `count` files are written."""
    original = pl.DataFrame.write_parquet
    done = {"n": 0}

    def write_parquet(self: pl.DataFrame, *args: Any, **kwargs: Any) -> object:
        out = original(self, *args, **kwargs)
        done["n"] += 1
        if done["n"] >= count:
            act()
        return out

    return write_parquet


def fail_after_some_files(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part writing a dataset, except that its first attempt raises after 5 files."""
    if not _first_attempt(part):
        return analyze_part(part)

    def fail() -> None:
        raise RuntimeError("simulated failure while writing the dataset")

    original = pl.DataFrame.write_parquet
    pl.DataFrame.write_parquet = _after_writes(5, fail)  # type: ignore[method-assign]
    try:
        return analyze_part(part)
    finally:
        pl.DataFrame.write_parquet = original  # type: ignore[method-assign]


def kill_worker_after_some_files(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part writing a dataset, except that its first attempt SIGKILLs its own worker
    process (found by its pid) after 5 files, the 5th not yet in place."""
    if _first_attempt(part):
        kill = _after_writes(5, lambda: os.kill(os.getpid(), signal.SIGKILL))
        pl.DataFrame.write_parquet = kill  # type: ignore[method-assign]
    return analyze_part(part)


def fragile(task: tuple[str, int, int]) -> int:
    """Task (folder, n, deaths): n * n, except that the first `deaths` processes to run task n
    kill themselves with SIGKILL (as the OOM killer would) after noting `run-n-PID` in folder."""
    folder, n, deaths = task
    runs = len(list(Path(folder).glob(f"run-{n}-*")))
    Path(folder, f"run-{n}-{os.getpid()}").touch()
    if runs < deaths:
        os.kill(os.getpid(), signal.SIGKILL)
    return n * n


def sigkill_on_marked_file(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that a partition holding a file named `crash-*` is SIGKILLed."""
    if any(f.path.name.startswith("crash-") for f in part.found):
        os.kill(os.getpid(), signal.SIGKILL)
    return analyze_part(part)


def sigkill_once_per_partition(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that the first process to run each partition is SIGKILLed (a
    `killed-INDEX` file in the folder of the partition's first trace says it was)."""
    mark = part.found[0].path.parent / f"killed-{part.index}"
    try:
        mark.touch(exist_ok=False)
    except FileExistsError:
        return analyze_part(part)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")
