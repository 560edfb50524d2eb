"""The dataset under the faults a fleet meets (issue 30): each ends with every trace's rows
exactly once, or exit 2 naming the trace that is missing and a re-run that completes it;
nothing is written outside the dataset; partition values read back exactly, as strings."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as pads
import pytest

import acp_trace
from acp_trace.errors import OutputError
from acp_trace.render.dataset import SCHEMA_VERSION, append
from clirun import Cli, runner
from datasetcheck import assert_exactly_once
from fleetgen import write_traces
from testpaths import ROOT

HOOK = Path(__file__).parent / "faulthook"
HANG_GUARD = 300  # seconds: only against a hang, never reached on a busy machine


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`cli("export", ...)` runs `acp-trace export ...` in this process, in tmp_path."""
    return runner(tmp_path, monkeypatch, capsys)


def export_process(dataset: Path, folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`acp-trace export --format parquet --dataset` in a process group of its own, with the
    fault hook loaded in it and its workers."""
    full = (
        os.environ | env | {"PYTHONPATH": f"{HOOK}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    )
    return subprocess.Popen(
        [sys.executable, "-m", "acp_trace", "export", "--format", "parquet",
         "--dataset", str(dataset), str(folder)],
        env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def test_two_concurrent_exports_write_each_trace_once(tmp_path: Path) -> None:
    """Two exports of the same 40 traces into one folder at once, both past their check of
    what the dataset holds before either writes: each row once, and the two runs' counts
    of new traces add up to 40."""
    folder = write_traces(tmp_path / "t", 40, distinct=True)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    dataset = tmp_path / "ds"
    runs = [export_process(dataset, folder, {"ACP_TEST_BARRIER": f"{barrier}:2"}) for _ in "ab"]
    outs = [r.communicate(timeout=HANG_GUARD) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    new = [int(out.decode().split(": ")[1].split()[0]) for out, _ in outs]
    assert sum(new) == 40, outs
    assert_exactly_once(dataset, folder)


def test_an_export_killed_mid_write_then_run_again(tmp_path: Path, cli: Cli) -> None:
    """SIGKILL of the export (and its worker) after its 7th Parquet file is written, before
    it is in place; the same export again completes the dataset, each row once."""
    folder = write_traces(tmp_path / "t", 20, distinct=True)
    dataset = tmp_path / "ds"
    killed = export_process(dataset, folder, {"ACP_TEST_KILL_AFTER": "7"})
    killed.communicate(timeout=HANG_GUARD)
    assert killed.returncode == -signal.SIGKILL
    assert any(p.name.endswith(".tmp") for p in dataset.rglob(".*"))  # it died mid-write
    result = cli("export", "--format", "parquet", "--dataset", str(dataset), str(folder))
    assert result.code == 0, result.err
    assert_exactly_once(dataset, folder)


def test_a_partition_that_cannot_be_written(tmp_path: Path, cli: Cli) -> None:
    """One agent's partition folder is blocked (a file where the folder goes): the export
    names each of its traces, exits 2, and every other trace is there once; with the block
    removed, the same export completes the dataset."""
    from acp_trace.render.dataset_keys import agent_key

    folder = write_traces(tmp_path / "t", 12, distinct=True, agents=["good", "blocked"])
    dataset = tmp_path / "ds"
    (dataset / "replays").mkdir(parents=True)
    (dataset / "acp-trace-dataset.json").write_text(f'{{"schema_version": {SCHEMA_VERSION}}}')
    block = dataset / "replays" / f"agent_key={agent_key('blocked')}"
    block.write_text("not a folder")
    args = ["export", "--format", "parquet", "--dataset", str(dataset), str(folder)]
    result = cli(*args)
    assert result.code == 2
    lines = result.err.strip().splitlines()
    blocked = {p for p in folder.rglob("*.jsonl") if '"blocked"' in p.read_text()}
    named = {line.split(": ")[2] for line in lines if line.startswith("acp-trace: not written")}
    assert blocked and named == {str(p) for p in blocked}, result.err
    assert lines[-1].startswith(f"acp-trace: {dataset}: {len(blocked)} trace(s) not written")
    good = tmp_path / "good"
    for p in set(folder.rglob("*.jsonl")) - blocked:
        (good / p.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(p, good / p.parent.name / p.name)
    assert_exactly_once(dataset, good, partial=blocked)
    block.unlink()
    assert cli(*args).code == 0
    assert_exactly_once(dataset, folder)


def test_a_failing_partition_is_retried_without_doubling(tmp_path: Path) -> None:
    """A worker that fails after writing some files is retried (twice): the retries write
    only what is missing, so the traces written before the failure are there once."""
    from acp_trace import fleet
    from crashy import fail_after_some_files

    folder = write_traces(tmp_path / "t", 10, distinct=True)
    dataset = tmp_path / "ds"
    result = fleet.run(folder, workers=1, partitions=1, dataset=dataset, retries=2,
                       analyze=fail_after_some_files)  # fmt: skip
    assert result.failed.height == 0 and result.unwritten.height == 0
    assert_exactly_once(dataset, folder)


def test_a_copy_of_a_recording_is_the_same_trace(tmp_path: Path) -> None:
    """A recording and its copy in another folder (same header, same trace_id), in one
    export and in two: its rows once."""
    folder = write_traces(tmp_path / "t", 4, distinct=True)
    copy = tmp_path / "t" / "copies"
    copy.mkdir()
    shutil.copy(folder / "batch0" / "t00000.jsonl", copy / "again.jsonl")
    dataset = tmp_path / "ds"
    written = append(acp_trace.analyze(folder), dataset)
    assert (written.new, written.known) == (4, 0)
    assert_exactly_once(dataset, folder)
    assert append(acp_trace.analyze(copy), dataset).new == 0
    assert_exactly_once(dataset, folder)


def test_a_planted_symlink_is_never_followed(tmp_path: Path, cli: Cli) -> None:
    """`DIR/replays/agent_key=...` pointing outside DIR: nothing is written through it; the
    traces of that partition are named, exit 2; a symlinked DIR itself is refused."""
    from acp_trace.render.dataset_keys import agent_key

    folder = write_traces(tmp_path / "t", 6, distinct=True, agents=["x"])
    dataset = tmp_path / "ds"
    append(
        acp_trace.analyze(write_traces(tmp_path / "first", 1, distinct=True, agents=["y"])), dataset
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (dataset / "replays" / f"agent_key={agent_key('x')}").symlink_to(outside)
    result = cli("export", "--format", "parquet", "--dataset", str(dataset), str(folder))
    assert result.code == 2
    assert "is a symlink or not a folder" in result.err
    assert list(outside.iterdir()) == []
    link = tmp_path / "link"
    link.symlink_to(dataset)
    with pytest.raises(OutputError, match="is a symlink"):
        append(acp_trace.analyze(folder), link)


LONG_NAME = ("日本語のコーディングエージェント" * 2)[:28]  # 84 bytes, 252 percent-encoded
HOSTILE = ["__HIVE_DEFAULT_PARTITION__", "007", "1e5", "2026-01-02", LONG_NAME, ".hidden",
           "_under", "a/b=c%d", "null", "x" * 300]  # fmt: skip


def test_hostile_partition_values_round_trip(tmp_path: Path) -> None:
    """Agent names a hive reader would misread (null, a number, a date), hide, or that do not
    fit a file name (28 Japanese characters: 252 bytes percent-encoded): each reads back as
    the same string in polars, DuckDB and pyarrow, whether hive partitioning is on or off."""
    assert len(LONG_NAME) == 28 and len(LONG_NAME.encode()) * 3 == 252
    folder = write_traces(tmp_path / "t", 30, distinct=True, agents=HOSTILE)
    dataset = tmp_path / "ds"
    append(acp_trace.analyze(folder), dataset)
    want = sorted(set(expected_agents(folder)))
    glob = f"{dataset}/replays/**/*.parquet"
    readings = {
        "polars": pl.scan_parquet(glob, hive_partitioning=True).select("agent").collect(),
        "polars-plain": pl.scan_parquet(glob, hive_partitioning=False).select("agent").collect(),
        "duckdb": duckdb.sql(f"select agent from read_parquet('{glob}', hive_partitioning=true)").pl(),
        "duckdb-default": duckdb.sql(f"select agent from read_parquet('{glob}')").pl(),
        "pyarrow": pl.from_arrow(pads.dataset(dataset / "replays", partitioning="hive").to_table(columns=["agent"])),
    }  # fmt: skip
    for how, df in readings.items():
        assert df.schema["agent"] == pl.String, how
        assert sorted(set(df["agent"].to_list())) == want, how
    for path in dataset.rglob("*"):
        assert len(path.name.encode()) <= 100, path


def expected_agents(folder: Path) -> list[str]:
    return acp_trace.analyze(folder).replays["agent"].to_list()


def test_the_documented_layout_reads_in_duckdb_with_hive_columns(tmp_path: Path) -> None:
    """DuckDB's default (hive columns guessed) reads the folder keys without error, next to
    the true values."""
    folder = write_traces(tmp_path / "t", 10, distinct=True, agents=["007", "agent"])
    dataset = tmp_path / "ds"
    append(acp_trace.analyze(folder), dataset)
    rows = duckdb.sql(
        f"select distinct agent, agent_key, day, date from read_parquet('{dataset}/replays/**/*.parquet')"
    ).fetchall()
    assert {r[0] for r in rows} == {"007", "agent"}
    assert all(str(r[2]) == str(r[3]) for r in rows)


def test_compaction_keeps_every_row_once_and_survives_a_kill(tmp_path: Path, cli: Cli) -> None:
    """`acp-trace compact DIR`: one file per partition, the same rows; killed after writing
    its merged file (before the swap), the dataset is unchanged and a second run completes;
    an export after compaction adds nothing for traces it holds."""
    folder = write_traces(tmp_path / "t", 30, distinct=True)
    dataset = tmp_path / "ds"
    assert cli("export", "--format", "parquet", "--dataset", str(dataset), str(folder)).code == 0
    before = len(list(dataset.rglob("*.parquet")))
    env = os.environ | {
        "ACP_TEST_KILL_AFTER": "1",
        "PYTHONPATH": f"{HOOK}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    killed = subprocess.run(
        [sys.executable, "-m", "acp_trace", "compact", str(dataset)], env=env,
        capture_output=True, timeout=HANG_GUARD, start_new_session=True, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    assert list((dataset / "_staging").iterdir())  # it died with its merged file half done
    assert_exactly_once(dataset, folder)
    result = cli("compact", str(dataset))
    assert result.code == 0, result.err
    assert "leftovers of interrupted runs removed" in result.out
    assert not list((dataset / "_staging").iterdir())
    files = list(dataset.rglob("*.parquet"))
    partitions = {p.parent for p in files}
    assert len(files) == len(partitions) < before
    assert_exactly_once(dataset, folder)
    again = cli("export", "--format", "parquet", "--dataset", str(dataset), str(folder))
    assert again.out.startswith(f"{dataset}: 0 new traces (30 already in the dataset)")
    assert_exactly_once(dataset, folder)


def test_docs_state_the_choice_and_the_cost() -> None:
    """docs/dataset.md says which design and why, and the measured cost at 10,000 traces."""
    text = (ROOT / "docs" / "dataset.md").read_text()
    assert "and not Delta Lake" in text and "10,000 traces" in text


def test_compact_refuses_what_is_not_its_own(tmp_path: Path, cli: Cli) -> None:
    """compact on a folder that is no dataset, or on one with a symlink planted in a
    partition: one line, exit 2, nothing changed and nothing followed."""
    (tmp_path / "notes").mkdir()
    result = cli("compact", str(tmp_path / "notes"))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "not an acp-trace dataset" in result.err
    folder = write_traces(tmp_path / "t", 6, distinct=True, agents=["x"])
    dataset = tmp_path / "ds"
    append(acp_trace.analyze(folder), dataset)
    partition = next((dataset / "replays").glob("agent_key=*/day=*"))
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"mine")
    (partition / "planted.parquet").symlink_to(outside)
    before = sorted(str(p) for p in dataset.rglob("*"))
    result = cli("compact", str(dataset))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "planted.parquet: not a regular file" in result.err
    assert sorted(str(p) for p in dataset.rglob("*")) == before
    assert outside.read_bytes() == b"mine"
