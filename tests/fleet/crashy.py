"""Partition functions that fail or kill their worker: the fleet's failure paths."""

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
