"""Partition functions (and a task) that kill their worker: the failure paths of --workers."""

from __future__ import annotations

import os
import signal
from pathlib import Path

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
