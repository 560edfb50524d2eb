"""A dataset written by Dask workers, one of which is SIGKILLed while writing: Dask runs its
partition again elsewhere and every trace's rows are there exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_trace import fleet
from crashy import kill_worker_after_some_files
from datasetcheck import assert_exactly_once
from fleetgen import write_traces


def test_a_dask_worker_killed_mid_write(tmp_path: Path) -> None:
    """A 2-worker LocalCluster; the first partition to run kills its worker process (by its
    pid) after writing 5 files, the 5th not yet in place: no failure, each row once."""
    distributed = pytest.importorskip("distributed")
    folder = write_traces(tmp_path / "t", 40, distinct=True)
    dataset = tmp_path / "ds"
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = fleet.run(
            folder, client=client, partitions=4, dataset=dataset, retries=1,
            analyze=kill_worker_after_some_files,
        )  # fmt: skip
    assert any(p.name.endswith(".tmp") for p in dataset.rglob(".*"))  # it died mid-write
    assert result.failed.height == 0 and result.unwritten.height == 0
    assert result.written["traces"] + result.written["known"] == 40  # known: done before the kill
    assert_exactly_once(dataset, folder)
