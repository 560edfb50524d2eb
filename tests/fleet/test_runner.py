"""The fleet gives the single-process tables row for row, on a local pool and on Dask, and
reports a failing file instead of dropping it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import acp_trace
from acp_trace import fleet
from acp_trace.errors import InputError, UsageError
from crashy import crash_on_marked_file, raise_on_marked_file
from fleetgen import write_traces
from testpaths import SAMPLES


def assert_same(paths: list[Path], result: fleet.FleetResult) -> None:
    """Every table of the fleet result equals the single-process one, row order included."""
    a = acp_trace.analyze(paths)
    assert_frame_equal(result.replays, a.replays)
    assert_frame_equal(result.findings(), a.findings())
    assert_frame_equal(
        result.findings(["marker-missing"], "error"), a.findings(["marker-missing"], "error")
    )
    assert_frame_equal(result.turns, a.turns)
    assert_frame_equal(result.traces(), a.traces())
    for by in ("method", "agent", "trace"):
        assert_frame_equal(result.latency(by), a.latency(by))
    from acp_trace.trace.reader import skipped_inputs

    assert_frame_equal(result.skipped, skipped_inputs(a.records))


def test_a_local_pool_gives_the_same_tables(small_fleet: Path) -> None:
    """Two local processes, many partitions, a stray file in the folder: identical tables."""
    result = fleet.run([small_fleet, SAMPLES], workers=2, partitions=7)
    assert result.partitions == 7 and result.failed.height == 0
    assert result.skipped["trace"].to_list() == [str(small_fleet / "batch1" / "agent.log")]
    assert_same([small_fleet, SAMPLES], result)


def test_only_the_tables_asked_for_are_computed(small_fleet: Path) -> None:
    """`tables=("replays",)`: the replays as ever; findings, turns and requests are not made
    (empty, without columns), while traces, skipped and untimed are always there."""
    result = fleet.run([small_fleet, SAMPLES], workers=2, tables=("replays",))
    a = acp_trace.analyze([small_fleet, SAMPLES])
    assert_frame_equal(result.replays, a.replays)
    assert_frame_equal(result.traces(), a.traces())
    assert result.all_findings.shape == result.turns.shape == result.requests.shape == (0, 0)
    assert result.untimed() == a.untimed()
    with pytest.raises(UsageError, match=r"tables=\['replay'\]: expected some of replays"):
        fleet.run([small_fleet], workers=1, tables=("replay",))


def test_a_dask_cluster_gives_the_same_tables(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A LocalCluster of 2 workers on 3,000 generated traces: identical tables, row for row."""
    distributed = pytest.importorskip("distributed")
    folder = write_traces(tmp_path_factory.mktemp("many"), 3000, seed=11)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = fleet.run(folder, client=client)
    assert result.partitions == 8 and result.failed.height == 0
    assert result.replays.height >= 3000
    assert_same([folder], result)


@pytest.mark.parametrize("fn", [crash_on_marked_file, raise_on_marked_file])
def test_a_failing_file_is_retried_then_reported(tmp_path: Path, fn: object) -> None:
    """A worker that dies (or raises) on one file: its partition is retried, then run file by
    file; only that file is reported, every other trace is analyzed."""
    folder = write_traces(tmp_path / "t", 12)
    bad = folder / "batch0" / "crash-me.jsonl"
    shutil.copy(folder / "batch0" / "t00000.jsonl", bad)
    result = fleet.run(folder, workers=2, partitions=3, retries=1, analyze=fn)  # type: ignore[arg-type]
    assert result.failed["trace"].to_list() == [str(bad)]
    assert result.failed["problem"][0]
    good = [p for p in sorted(folder.rglob("*.jsonl")) if p != bad]
    assert_same(good, result)


def test_a_failing_file_on_dask_is_reported(tmp_path: Path) -> None:
    """On Dask too: the task is retried, then the failing file is named."""
    distributed = pytest.importorskip("distributed")
    folder = write_traces(tmp_path / "t", 6)
    bad = folder / "batch1" / "crash-me.jsonl"
    shutil.copy(folder / "batch1" / "t00001.jsonl", bad)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = fleet.run(
            folder, client=client, partitions=2, retries=1, analyze=raise_on_marked_file
        )
    assert result.failed["trace"].to_list() == [str(bad)]
    assert "simulated worker failure" in result.failed["problem"][0]


def test_input_errors_are_raised_as_for_one_process(tmp_path: Path) -> None:
    """An explicit file that is no trace, or a folder with none: InputError, not a failure."""
    (tmp_path / "notes.log").write_text("hello\n")
    with pytest.raises(InputError, match=r"notes\.log: expected an acp-trace v1 trace"):
        fleet.run([tmp_path / "notes.log"], workers=1)
    with pytest.raises(InputError, match="no trace among its 1 file"):
        fleet.run([tmp_path], workers=1)


def test_a_bad_worker_count_is_a_usage_error(small_fleet: Path) -> None:
    """--workers 0 is refused."""
    from acp_trace.errors import UsageError

    with pytest.raises(UsageError, match="--workers 0: expected 1 or more"):
        fleet.run(small_fleet, workers=0)
