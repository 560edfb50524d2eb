"""Fault injection for the dataset tests: Python imports this at start in every process whose
PYTHONPATH names this folder (an export under test, its pool workers, a forkserver), and it
wraps polars' `DataFrame.write_parquet`, which every dataset file goes through.

ACP_TEST_KILL_AFTER=N      after the Nth Parquet file of this process is written (not yet
                           renamed into place), SIGKILL the whole process group: the export
                           and its workers die mid-write, as with `kill -9 -PGID`.
ACP_TEST_BARRIER=DIR:N     before the first Parquet write, make DIR/<pid> and wait until DIR
                           holds N entries (or 120 s pass): concurrent exports have all
                           checked what the dataset holds before any of them writes.
"""

from __future__ import annotations

import os
import signal
import time

_KILL = os.environ.get("ACP_TEST_KILL_AFTER")
_BARRIER = os.environ.get("ACP_TEST_BARRIER")

if _KILL or _BARRIER:
    import polars as pl

    _original = pl.DataFrame.write_parquet
    _state = {"writes": 0}

    def _wait_at_barrier() -> None:
        assert _BARRIER is not None
        folder, count = _BARRIER.rsplit(":", 1)
        open(os.path.join(folder, str(os.getpid())), "w").close()
        deadline = time.monotonic() + 120
        while len(os.listdir(folder)) < int(count) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _write_parquet(self, file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _BARRIER and _state["writes"] == 0:
            _wait_at_barrier()
        out = _original(self, file, *args, **kwargs)
        _state["writes"] += 1
        if _KILL and _state["writes"] >= int(_KILL):
            os.killpg(0, signal.SIGKILL)
        return out

    pl.DataFrame.write_parquet = _write_parquet  # type: ignore[method-assign]
