"""A local fleet run whose worker is killed (SIGKILL, the OOM killer) gives the single-process
tables when the partition's second process lives, and names the trace, the processes and the
signal when it does not; it never hangs and leaves no process behind."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

from test_runner import assert_same

from acp_trace import fleet
from crashy import sigkill_on_marked_file, sigkill_once_per_partition
from fleetgen import write_traces


def test_every_partition_survives_one_killed_worker(tmp_path: Path) -> None:
    """The first process of every partition is SIGKILLed: each partition runs again in a new
    one, and the tables are the single-process ones, nothing failed."""
    folder = write_traces(tmp_path / "t", 24)
    traces = sorted(folder.rglob("*.jsonl"))
    result = fleet.run(folder, workers=2, partitions=4, analyze=sigkill_once_per_partition)
    assert len(list(folder.rglob("killed-*"))) == 4
    assert result.failed.height == 0
    assert_same(traces, result)
    assert multiprocessing.active_children() == []


def test_a_trace_that_kills_every_worker_is_named(tmp_path: Path) -> None:
    """A trace whose every process is SIGKILLed: its partition runs again once, then file by
    file; that trace alone is reported, with the processes and the signal; the rest is the
    single-process result."""
    folder = write_traces(tmp_path / "t", 12)
    bad = folder / "batch2" / "crash-me.jsonl"
    shutil.copy(folder / "batch2" / "t00002.jsonl", bad)
    result = fleet.run(folder, workers=2, partitions=3, analyze=sigkill_on_marked_file)
    assert result.failed["trace"].to_list() == [str(bad)]
    problem = result.failed["problem"][0]
    assert problem.count("was killed by SIGKILL") == 2, problem
    assert f"while reading {bad}" in problem
    assert_same([p for p in sorted(folder.rglob("*.jsonl")) if p != bad], result)
    assert multiprocessing.active_children() == []
