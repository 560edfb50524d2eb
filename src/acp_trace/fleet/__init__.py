"""The same analysis over many traces on many processes: a local pool or a Dask cluster.

`run(paths, ...)` finds the traces, groups them into size-balanced partitions (contiguous runs
of the file list, so concatenating the results keeps the single-process order), analyzes each
partition with the library code a laptop runs (`analyze`), and returns one `FleetResult`:
the replays, findings, turns, request rows (for latency), traces and skipped tables, equal row
for row to `analyze(paths)`'s. With `dataset=DIR` each worker appends its partition to a
Parquet dataset itself (acp_trace.render.dataset) and only counts come back. A partition that
fails is retried; if it still fails, its files are analyzed one by one and those that fail
are reported by file (`FleetResult.failed`), never dropped silently.

Dask is optional (`pip install -e '.[fleet]'` in a clone): the local pool needs nothing more.
"""

from __future__ import annotations

from acp_trace.fleet.partition import partition
from acp_trace.fleet.result import FleetResult
from acp_trace.fleet.runner import run

__all__ = ["FleetResult", "partition", "run"]
