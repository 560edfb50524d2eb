"""Checking a Parquet dataset against the traces it was exported from: each row exactly once."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

import acp_trace
from acp_trace.render.dataset import TABLES, dataset_tables, trace_ids


def expected(folder: Path) -> dict[str, pl.DataFrame]:
    """Rows per trace_id and table, as one analysis of the traces gives them (of copies of a
    recording, one)."""
    a = acp_trace.analyze(folder)
    tables = dataset_tables(a)
    kept = trace_ids(a).unique("trace_id", keep="first", maintain_order=True)["trace"]
    return {
        t: tables[t]
        .filter(pl.col("trace").is_in(kept.to_list()))
        .group_by("trace_id")
        .len()
        .sort("trace_id")
        for t in TABLES
    }


def stored(dataset: Path, table: str) -> pl.DataFrame:
    """The table as polars reads the dataset's Parquet files."""
    files = sorted((dataset / table).rglob("*.parquet"))
    return pl.read_parquet(files) if files else pl.DataFrame()


def assert_exactly_once(dataset: Path, folder: Path, partial: set[Path] = frozenset()) -> None:
    """Every trace's rows of every table once: counts per trace_id equal the analysis's, in
    polars and in DuckDB (`partial`: traces whose other tables may be there, not replays)."""
    want = expected(folder)
    if partial:
        gone = dataset_tables(acp_trace.analyze(sorted(partial)))["records"]["trace_id"].unique()
    for table in TABLES:
        got = stored(dataset, table)
        if partial and got.height:
            got = got.filter(~pl.col("trace_id").is_in(gone.to_list()))
        counts = got.group_by("trace_id").len().sort("trace_id") if got.height else got
        assert counts.equals(want[table]), table
        glob = f"{dataset}/{table}/**/*.parquet"
        n = duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall()[0]
        assert n == (want[table]["len"].sum(),), table
