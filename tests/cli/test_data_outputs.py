"""Data outputs load where the README says: one table per CSV, read back by polars and DuckDB
equal to the JSON; CSV cells exact unless --spreadsheet asks for the formula guard; the
replays outputs hold every column of the replays table and the gap; diff's JSON rounded and
its Markdown a real list."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import duckdb
import orjson
import polars as pl
import pytest

import acp_trace
from clirun import Cli
from tracebuilder import TraceBuilder

AGENT = "@scope/agent"  # what the formula guard used to turn into '@scope/agent
SESSION = "-sess=1"


def hostile(path: Path, gaps: tuple[float, ...] = (40, 400)) -> Path:
    """Replays of an npm-scoped agent on a session id that starts like a formula, a prompt
    turn, and a stderr line inside a gap."""
    b = TraceBuilder(agent=AGENT, version="1.0.3")
    for gap in gaps:
        rid = b.resume(SESSION)
        b.history(SESSION, 2)
        b.text("stderr", "token=SECRET loading history")
        b.response(rid, {}, dt=gap / 3)
    p = b.request("session/prompt", {"sessionId": SESSION, "prompt": []})
    b.response(p, {})
    b.update(SESSION, "agent_message_chunk", dt=30, messageId="m9")
    b.state(SESSION, stopReason="end_turn", dt=20)
    return b.write(path)


def read_back(text: str, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A CSV read by polars and by DuckDB, as rows."""
    file = tmp_path / "read.csv"
    file.write_text(text)
    by_polars = pl.read_csv(io.StringIO(text)).to_dicts()
    con = duckdb.connect()
    cursor = con.execute(f"select * from read_csv('{file}', header=true)")
    names = [d[0] for d in cursor.description]
    by_duckdb = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return by_polars, by_duckdb


def csv_id(cell: str | None) -> Any:
    """A JSON-RPC id as the JSON outputs hold it, from its CSV cell (`number:1`, `"1"`)."""
    if cell is None or cell == "":
        return None
    kind, _, text = cell.partition(":")
    return orjson.loads(text if kind in ("number", "json") else cell)


def same(rows: list[dict[str, Any]], json_rows: list[dict[str, Any]]) -> None:
    """CSV rows equal the JSON rows, cell by cell (numbers as numbers; empty is null)."""
    assert len(rows) == len(json_rows)
    for got, want in zip(rows, json_rows, strict=True):
        for name, value in want.items():
            if isinstance(value, list | dict):
                continue
            cell = csv_id(got[name]) if name in ("id", "request_id") else got[name]
            if isinstance(value, float) or isinstance(cell, float):
                assert cell == pytest.approx(value), name
            else:
                assert (None if cell == "" else cell) == value, name


@pytest.mark.parametrize("table", ["requests", "prompt_turns"])
def test_latency_csv_is_one_table_polars_and_duckdb_read(
    cli: Cli, tmp_path: Path, table: str
) -> None:
    """latency --format csv holds one table (requests, or the one --table names): polars and
    DuckDB read it back equal to the JSON's, the agent exact."""
    hostile(tmp_path / "t.jsonl")
    args = ["latency", "t.jsonl", "--by", "agent"]
    csv = cli(*args, "--format", "csv", *(["--table", table] if table != "requests" else [])).out
    assert not csv.startswith("#")
    want = orjson.loads(cli(*args, "--format", "json").out)[table]
    by_polars, by_duckdb = read_back(csv, tmp_path)
    same(by_polars, want)
    same(by_duckdb, want)
    assert {r["agent"] for r in by_polars} == {AGENT}


def test_replays_csv_round_trips_exactly_and_spreadsheet_guards(cli: Cli, tmp_path: Path) -> None:
    """replays --format csv: `@scope/agent` and `-sess=1` exact, equal to the JSON and to the
    Parquet export (the three join); --spreadsheet puts the guard on them."""
    hostile(tmp_path / "t.jsonl")
    want = orjson.loads(cli("replays", "t.jsonl", "--format", "json").out)
    csv = cli("replays", "t.jsonl", "--format", "csv").out
    by_polars, by_duckdb = read_back(csv, tmp_path)
    same(by_polars, want)
    same(by_duckdb, want)
    assert by_polars[0]["agent"] == AGENT and by_duckdb[0]["session"] == SESSION
    assert cli("export", "t.jsonl", "--format", "parquet", "-o", "out/").code == 0
    parquet = pl.read_parquet(tmp_path / "out" / "replays.parquet")
    assert parquet["agent"].to_list() == [r["agent"] for r in by_polars]
    joined = parquet.join(pl.read_csv(io.StringIO(csv)), on=["session", "agent"])
    assert joined.height == 4  # 2 x 2: the keys match
    guarded = cli("replays", "t.jsonl", "--format", "csv", "--spreadsheet").out
    rows = pl.read_csv(io.StringIO(guarded)).to_dicts()
    assert rows[0]["agent"] == "'" + AGENT and rows[0]["session"] == "'" + SESSION


def test_export_csv_is_exact_unless_spreadsheet(cli: Cli, tmp_path: Path) -> None:
    """export --format csv: cells exact as in Parquet; --spreadsheet guards them."""
    hostile(tmp_path / "t.jsonl")
    assert cli("export", "t.jsonl", "--format", "csv", "-o", "plain/").code == 0
    assert cli("export", "t.jsonl", "--format", "csv", "--spreadsheet", "-o", "safe/").code == 0
    plain = pl.read_csv(tmp_path / "plain" / "replays.csv")
    safe = pl.read_csv(tmp_path / "safe" / "replays.csv")
    assert set(plain["agent"]) == {AGENT} and set(safe["agent"]) == {"'" + AGENT}


def test_spreadsheet_goes_with_csv_only(cli: Cli, tmp_path: Path) -> None:
    """--spreadsheet with json or a table: a usage error, before the traces are read."""
    result = cli("replays", "nosuch.jsonl", "--spreadsheet")
    assert result.code == 2
    assert result.err == "acp-trace: --spreadsheet goes with --format csv, not --format table\n"


def test_replays_outputs_hold_every_column_of_the_table(cli: Cli, tmp_path: Path) -> None:
    """Whatever columns the replays table has (now or added later), json and csv hold each,
    plus gap_ms and gap_source; rows in trace order."""
    trace = hostile(tmp_path / "t.jsonl")
    table = acp_trace.analyze(str(trace)).replays
    rows = orjson.loads(cli("replays", "t.jsonl", "--format", "json").out)
    header = cli("replays", "t.jsonl", "--format", "csv").out.splitlines()[0].split(",")
    for columns in (list(rows[0]), header):
        assert set(table.columns) <= set(columns), set(table.columns) - set(columns)
        assert {"gap_ms", "gap_source"} <= set(columns)
    assert [r["gap_source"] for r in rows] == ["last_history", "last_history"]
    assert [r["gap_ms"] for r in rows] == [r["last_history_to_response_ms"] for r in rows]


def test_diff_json_rounds_and_markdown_lists(cli: Cli, tmp_path: Path) -> None:
    """diff --format json: floats at most six decimals, like every JSON output; --format
    markdown: the regressions a real list (`- ` at the line start, no `\\-`)."""
    base = hostile(tmp_path / "base.jsonl", tuple(20 + i % 3 + 1 / 3 for i in range(8)))
    new = hostile(tmp_path / "new.jsonl", tuple(120 + i % 5 + 1 / 7 for i in range(8)))
    doc = json.loads(cli("diff", "--format", "json", str(base), "--", str(new)).out)

    def floats(value: Any) -> list[float]:
        if isinstance(value, float):
            return [value]
        if isinstance(value, dict):
            return [f for v in value.values() for f in floats(v)]
        if isinstance(value, list):
            return [f for v in value for f in floats(v)]
        return []

    found = floats(doc["metrics"])
    assert found and all(round(f, 6) == f for f in found)
    md = cli("diff", "--format", "markdown", str(base), "--", str(new)).out
    items = [line for line in md.splitlines() if line.startswith("- ")]
    assert items and items[0].startswith("- gap p50 of ") and "\\-" not in md
