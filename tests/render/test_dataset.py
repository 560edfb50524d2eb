"""The Parquet dataset: hive layout, private files, no duplicates on re-export, read as is by
DuckDB and polars, and the documented queries run."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import duckdb
import polars as pl
import pytest

import acp_trace
from acp_trace.errors import OutputError
from acp_trace.render.dataset import SCHEMA_VERSION, TABLES, append, dataset_tables
from testpaths import ROOT, SAMPLES


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    written = append(acp_trace.analyze(SAMPLES), out)
    assert written.new == len(list(SAMPLES.glob("*.jsonl"))) and written.known == 0
    return out


def test_layout_is_hive_partitioned_and_private(dataset: Path) -> None:
    """DIR/<table>/agent_key=<slug~hash>/day=<day>/<trace_id>-v4.parquet, the bookkeeping
    under _traces/, 0600 and 0700."""
    parts = sorted(dataset.rglob("*.parquet"))
    rel = {p.relative_to(dataset).parts[0] for p in parts}
    assert rel == {"records", "replays", "findings", "turns"}
    layout = re.compile(
        r"^(records|replays|findings|turns)/agent_key=[A-Za-z0-9-]+~[0-9a-f]{12}/day=(\d{4}-\d\d-\d\d|__HIVE_DEFAULT_PARTITION__)/[0-9a-f]{32}-v4\.parquet$"
    )
    for p in parts:
        assert layout.match(p.relative_to(dataset).as_posix()), p
    for p in dataset.rglob("*"):
        mode = stat.S_IMODE(os.stat(p).st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), p
    assert stat.S_IMODE(os.stat(dataset).st_mode) == 0o700
    keys = {p.name for p in (dataset / "replays").iterdir()}
    assert any(k.startswith("agent_key=agentclientprotocol-claude-agent-acp~") for k in keys)
    done = list((dataset / "_traces").rglob("*.done"))
    assert len(done) == len(list(SAMPLES.glob("*.jsonl")))


def test_re_exporting_adds_nothing(dataset: Path) -> None:
    """The same traces again (even from a copy elsewhere): no row is written twice."""
    before = sorted(dataset.rglob("*.parquet"))
    again = append(acp_trace.analyze(SAMPLES), dataset)
    assert again.new == 0 and again.known == len(list(SAMPLES.glob("*.jsonl")))
    assert sorted(dataset.rglob("*.parquet")) == before


def test_duckdb_and_polars_read_it_as_is(dataset: Path) -> None:
    """Both read every table with agent and date, typed; rows match the analysis."""
    a = acp_trace.analyze(SAMPLES)
    for table in ("records", "replays", "findings"):
        glob = f"{dataset}/{table}/**/*.parquet"
        df = pl.scan_parquet(glob, hive_partitioning=True).collect()
        assert df.height == dataset_tables(a)[table].height
        assert df.schema["date"] == pl.Date and df.schema["agent"] == pl.String
        assert df["schema_version"].unique().to_list() == [SCHEMA_VERSION]
        n = duckdb.sql(
            f"select count(*) from read_parquet('{glob}', hive_partitioning=true)"
        ).fetchall()[0]
        assert n == (df.height,)
    agents = duckdb.sql(
        f"select distinct agent from read_parquet('{dataset}/replays/**/*.parquet', hive_partitioning=true) order by 1"
    ).fetchall()
    assert ("@agentclientprotocol/claude-agent-acp",) in agents


def _queries() -> dict[str, str]:
    """The SQL blocks of docs/dataset.md, by their heading."""
    text = (ROOT / "docs" / "dataset.md").read_text()
    return dict(re.findall(r"^### (.+?)\n\n```sql\n(.*?)```", text, flags=re.M | re.S))


def test_the_documented_queries_run(dataset: Path) -> None:
    """Each of the five queries of docs/dataset.md runs on a real dataset and answers."""
    queries = _queries()
    assert len(queries) == 5
    results = {
        name: duckdb.sql(sql.replace("DIR", str(dataset))).fetchall()
        for name, sql in queries.items()
    }
    assert all(rows for rows in results.values()), results
    truncated = results["Traces with truncated replays"]
    assert any("crash-mid-replay" in str(row) for row in truncated)


def test_columns_are_documented() -> None:
    """docs/dataset.md lists exactly the columns of each table, in order."""
    text = (ROOT / "docs" / "dataset.md").read_text()
    a = acp_trace.analyze(SAMPLES / "demo-v2-children.jsonl")
    tables = dataset_tables(a)
    for name in TABLES:
        block = re.search(rf"^## `{name}`\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
        assert block, name
        documented = re.findall(r"^\| `(\w+)` \|", block.group(1), flags=re.M)
        expected = tables[name].columns
        assert documented == expected, name


def test_a_folder_that_is_not_a_dataset_is_refused(tmp_path: Path) -> None:
    """A non-empty folder without the marker file is not written into."""
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not an acp-trace dataset"):
        append(acp_trace.analyze(SAMPLES / "demo-v1-load.jsonl"), tmp_path)
