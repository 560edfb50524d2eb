"""Exports: Parquet that DuckDB reads as it is, CSV, and a valid Chrome/Perfetto trace-event JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import jsonschema
import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from acp_trace import analyze
from acp_trace.cli import app, main
from acp_trace.errors import OutputError, UsageError
from acp_trace.render.export import json_nested, portable, write_export
from acp_trace.render.perfetto import GAP_FALLBACK, GAP_MARKER, trace_events
from tracebuilder import TraceBuilder


def sample(path: Path) -> Path:
    """A v2 trace: a marked replay with a child, an unmarked one, a prompt sent while a resume is
    pending (overlapping requests on one session), an agent request and a tap event."""
    b = TraceBuilder(agent="exp-agent", version="3.1")
    rid = b.resume("s1")
    b.history("s1", 2)
    b.update("s1", "subagent_update", sessionId="c1")
    b.history("c1", 1)
    b.marker("c1")
    b.marker("s1")
    b.state("s1")
    b.response(rid, dt=250)
    r2 = b.resume("s2")
    b.history("s2", 1)
    b.state("s2")
    p = b.request("session/prompt", {"sessionId": "s2", "prompt": []})
    b.response(r2, dt=80)
    perm = b.request("session/request_permission", {"sessionId": "s2"}, src="agent")
    b.response(perm, {"outcome": "allowed"}, src="client")
    b.response(p, {"stopReason": "end_turn"}, dt=30)
    b.event("exit", code=0)
    return b.write(path)


def ordering_only(path: Path) -> Path:
    b = TraceBuilder(agent="no-clock")
    rid = b.resume("u1")
    b.history("u1", 1)
    b.response(rid)
    lines = [b.lines[0]]
    for line in b.lines[1:]:
        rec = orjson.loads(line)
        rec.pop("t_ns")
        lines.append(orjson.dumps(rec))
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


# ---------------------------------------------------------------- Parquet and CSV


def test_parquet_round_trips_through_duckdb(tmp_path: Path) -> None:
    """records, replays and findings .parquet read back in DuckDB with the same rows and values."""
    a = analyze(sample(tmp_path / "t.jsonl"))
    written = write_export(a, "parquet", tmp_path / "pq")
    assert [p.name for p in written] == ["records.parquet", "replays.parquet", "findings.parquet"]
    con = duckdb.connect()
    for name, df in (("records", a.timeline), ("replays", a.replays), ("findings", a.findings())):
        path = tmp_path / "pq" / f"{name}.parquet"
        assert con.execute(f"select count(*) from '{path}'").fetchone() == (df.height,)
    replays = tmp_path / "pq" / "replays.parquet"
    got = con.execute(
        f"select session, outcome, marker_to_response_ms from '{replays}' order by session"
    ).fetchall()
    want = a.replays.sort("session").select("session", "outcome", "marker_to_response_ms").rows()
    assert got == want
    records = tmp_path / "pq" / "records.parquet"
    seq5 = a.timeline.filter(pl.col("seq") == 5)
    got_row = con.execute(f"select msg, row, peer_row from '{records}' where seq = 5").fetchone()
    assert got_row == (seq5["msg"][0], seq5["row"][0], seq5["peer_row"][0])


def test_parquet_uses_only_plain_types(tmp_path: Path) -> None:
    """No unsigned, dictionary (categorical) or null-typed columns reach the Parquet files."""
    write_export(analyze(sample(tmp_path / "t.jsonl")), "parquet", tmp_path / "pq")
    for path in (tmp_path / "pq").glob("*.parquet"):  # the folder also holds its manifest
        for field in pq.read_schema(path):
            kind = str(field.type)
            assert not kind.startswith(("uint", "dictionary", "null")), (path.name, field)
    con = duckdb.connect()
    described = con.execute(f"describe select * from '{tmp_path / 'pq' / 'records.parquet'}'")
    types = {row[0]: row[1] for row in described.fetchall()}
    assert types["row"] == types["peer_row"] == "BIGINT"


def test_portable_casts_polars_specific_types() -> None:
    """portable() turns unsigned, categorical and null columns (also nested) into plain ones."""
    df = pl.DataFrame(
        {
            "u": pl.Series([1, 2], dtype=pl.UInt32),
            "c": pl.Series(["a", "b"], dtype=pl.Categorical),
            "n": pl.Series([None, None], dtype=pl.Null),
            "l": pl.Series([[1], [2]], dtype=pl.List(pl.UInt8)),
            "s": pl.Series([{"x": 1}, {"x": 2}], dtype=pl.Struct({"x": pl.UInt16})),
        }
    )
    assert portable(df).schema == pl.Schema(
        {
            "u": pl.Int64,
            "c": pl.String,
            "n": pl.String,
            "l": pl.List(pl.Int64),
            "s": pl.Struct({"x": pl.Int64}),
        }
    )


def test_csv_export_and_json_encoded_nested_columns(tmp_path: Path) -> None:
    """CSV tables read back with the same rows (messages intact); nested columns become JSON."""
    a = analyze(sample(tmp_path / "t.jsonl"))
    write_export(a, "csv", tmp_path / "csv")
    records = pl.read_csv(tmp_path / "csv" / "records.csv", infer_schema=False)
    assert records.height == a.timeline.height
    assert records["msg"].to_list() == a.timeline["msg"].to_list()
    replays = (
        duckdb.connect()
        .execute(f"select count(*) from '{tmp_path / 'csv' / 'replays.csv'}'")
        .fetchone()
    )
    assert replays == (a.replays.height,)
    nested = json_nested(pl.DataFrame({"l": [[1, 2], None], "s": [{"a": "x"}, {"a": None}]}))
    assert nested.to_dict(as_series=False) == {
        "l": ["[1,2]", None],
        "s": ['{"a":"x"}', '{"a":null}'],
    }


HUGE = 2**70  # an id beyond 64 bits


def mixed_ids(path: Path) -> Path:
    """A trace of 120 requests with integer ids, then ids `"1"` (a string), 1 (a number,
    again), `"orphan-1"` and 2**70, each a resume with a replay."""
    b = TraceBuilder()
    for _ in range(120):
        b.response(b.request("session/prompt", {"sessionId": "s", "prompt": []}), {})
    for n, rid in enumerate(["1", 1, "orphan-1", "HUGE"]):
        b.request("session/resume", {"sessionId": f"r{n}", "replayFrom": {"type": "start"}}, id=rid)
        b.history(f"r{n}", 1)
        b.marker(f"r{n}")
        b.response(rid, {})
    b.write(path)
    path.write_text(path.read_text().replace('"id":"HUGE"', f'"id":{HUGE}'))  # orjson: 64 bits
    return path


@pytest.mark.parametrize("traces", ["samples", "mixed ids"])
def test_every_csv_loads_in_polars_with_ids_apart(tmp_path: Path, traces: str) -> None:
    """`pl.read_csv(path)`, types guessed, loads records.csv, replays.csv and findings.csv of
    the sample traces and of a trace whose ids mix numbers, strings and integers beyond 64
    bits; string ids keep their JSON text, numbers are `number:N`, so `"1"` and 1 differ."""
    from testpaths import SAMPLES

    source = SAMPLES if traces == "samples" else mixed_ids(tmp_path / "t.jsonl")
    write_export(analyze(source), "csv", tmp_path / "csv")
    for name in ("records", "replays", "findings"):
        loaded = pl.read_csv(tmp_path / "csv" / f"{name}.csv")
        assert loaded.height > 0 and duckdb.sql(f"from '{tmp_path / 'csv' / name}.csv'").shape
    ids = set(pl.read_csv(tmp_path / "csv" / "records.csv")["id"].drop_nulls())
    asked = set(pl.read_csv(tmp_path / "csv" / "replays.csv")["request_id"])
    if traces == "mixed ids":
        assert {'"1"', "number:1", '"orphan-1"', f"number:{HUGE}", "number:120"} <= ids
        assert asked == {'"1"', "number:1", '"orphan-1"', f"number:{HUGE}"}
    else:
        assert '"orphan-1"' in ids and "number:0" in ids


def test_csv_export_rounds_floats_to_the_nanosecond(tmp_path: Path) -> None:
    """Times taken in ns give ms with at most six decimals in the CSV, no float noise."""
    b = TraceBuilder()
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []}, dt=0.000001)
    b.response(rid, {}, dt=87.322911)
    write_export(analyze(b.write(tmp_path / "t.jsonl")), "csv", tmp_path / "csv")
    text = (tmp_path / "csv" / "records.csv").read_text()
    assert "87.322911" in text and "87.32291099" not in text
    records = pl.read_csv(tmp_path / "csv" / "records.csv")
    decimals = [len(f"{v}".partition(".")[2]) for v in records["latency_ms"].drop_nulls()]
    assert decimals and max(decimals) <= 6


def test_perfetto_goes_into_a_directory_as_trace_json(tmp_path: Path) -> None:
    """-o DIR/ (created) or an existing DIR gives DIR/trace.json; a file name is used as it is."""
    a = analyze(sample(tmp_path / "t.jsonl"))
    assert write_export(a, "perfetto", f"{tmp_path}/new/") == [tmp_path / "new" / "trace.json"]
    assert write_export(a, "perfetto", tmp_path / "new") == [tmp_path / "new" / "trace.json"]
    assert write_export(a, "perfetto", tmp_path / "p.json") == [tmp_path / "p.json"]
    assert orjson.loads((tmp_path / "new" / "trace.json").read_bytes())["traceEvents"]


def test_tables_need_a_directory(tmp_path: Path) -> None:
    """Parquet and CSV refuse an output that is an existing file; unknown formats are refused."""
    a = analyze(sample(tmp_path / "t.jsonl"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="expected a directory for the output, found a file"):
        write_export(a, "parquet", tmp_path / "file")
    with pytest.raises(UsageError, match="expected one of parquet, csv, perfetto"):
        write_export(a, "xlsx", tmp_path / "x")


# ---------------------------------------------------------------- Perfetto

EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
        "traceEvents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "ph", "pid", "tid"],
                "properties": {
                    "name": {"type": "string"},
                    "cat": {"type": "string"},
                    "pid": {"type": "integer"},
                    "tid": {"type": "integer"},
                    "ts": {"type": "number"},
                    "args": {"type": "object"},
                },
                "allOf": [
                    {
                        "if": {"properties": {"ph": {"const": "X"}}},
                        "then": {
                            "required": ["ts", "dur", "cat"],
                            "properties": {"dur": {"type": "number", "minimum": 0}},
                        },
                    },
                    {
                        "if": {"properties": {"ph": {"const": "i"}}},
                        "then": {
                            "required": ["ts", "s", "cat"],
                            "properties": {"s": {"enum": ["g", "p", "t"]}},
                        },
                    },
                    {
                        "if": {"properties": {"ph": {"const": "M"}}},
                        "then": {
                            "required": ["args"],
                            "properties": {
                                "name": {
                                    "enum": [
                                        "process_name",
                                        "process_sort_index",
                                        "thread_name",
                                        "thread_sort_index",
                                    ]
                                }
                            },
                        },
                    },
                    {"properties": {"ph": {"enum": ["X", "i", "M"]}}},
                ],
            },
        },
    },
}


def perfetto(tmp_path: Path, *traces: Path) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    write_export(analyze(list(traces)), "perfetto", out)
    doc: dict[str, Any] = json.loads(out.read_text())
    jsonschema.validate(doc, EVENT_SCHEMA)
    return doc


def thread_names(doc: dict[str, Any]) -> dict[tuple[int, int], str]:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def test_perfetto_json_follows_the_trace_event_format(tmp_path: Path) -> None:
    """Every event has the keys its phase needs, numeric ts/dur, dur >= 0, and every track used
    is named by a thread_name metadata event; complete events nest properly on each track."""
    doc = perfetto(tmp_path, sample(tmp_path / "t.jsonl"))
    assert doc["displayTimeUnit"] == "ms"
    names = thread_names(doc)
    spans: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        assert (e["pid"], e["tid"]) in names
        if e["ph"] == "X":
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for track, items in spans.items():
        stack: list[int] = []
        for start, end in sorted(items, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], (names[track], start, end)
            stack.append(end)


def test_perfetto_has_a_track_per_session_with_requests_updates_and_markers(tmp_path: Path) -> None:
    """Requests are spans named by method on their session's track, updates are instants named
    by kind, markers are `replay_complete` instants in category `marker`, and each replay's gap
    is a span whose duration is its gap in microseconds."""
    path = sample(tmp_path / "t.jsonl")
    doc = perfetto(tmp_path, path)
    names = thread_names(doc)
    assert {"connection", "session s1", "session c1", "session s2"} <= set(names.values())
    by_track: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] != "M":
            by_track[names[(e["pid"], e["tid"])]].append(e)
    s1 = by_track["session s1"]
    assert [e["name"] for e in s1 if e["ph"] == "X" and e["cat"] == "request"] == ["session/resume"]
    kinds = [e["name"] for e in s1 if e["ph"] == "i"]
    assert kinds.count("user_message") == 2 and "state_update" in kinds
    markers = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["cat"] == "marker"]
    assert sorted(names[(m["pid"], m["tid"])] for m in markers) == ["session c1", "session s1"]
    assert all(m["name"] == "replay_complete" for m in markers)
    replays = analyze(path).replays
    for track, session in (("session s1", "s1"), ("session c1", "c1")):
        gap = next(e for e in by_track[track] if e["name"] == GAP_MARKER)
        want = replays.filter(pl.col("session") == session)["marker_to_response_ms"][0]
        assert gap["cat"] == "marker"
        assert gap["dur"] == pytest.approx(want * 1000, abs=1)
    fallback = next(e for e in by_track["session s2"] if e["name"] == GAP_FALLBACK)
    want = replays.filter(pl.col("session") == "s2")["last_history_to_response_ms"][0]
    assert fallback["dur"] == pytest.approx(want * 1000, abs=1)
    permission = [e for e in by_track["session s2"] if e["name"] == "session/request_permission"]
    assert permission[0]["cat"] == "agent_request"
    assert any(e["name"] == "tap exit" for e in by_track["connection"])


def test_perfetto_puts_overlapping_requests_on_a_second_track(tmp_path: Path) -> None:
    """A prompt sent while a resume is pending and answered after it goes to an extra track of
    the same session rather than breaking the nesting of the first."""
    doc = perfetto(tmp_path, sample(tmp_path / "t.jsonl"))
    names = thread_names(doc)
    prompt = next(e for e in doc["traceEvents"] if e["name"] == "session/prompt")
    resume = next(
        e
        for e in doc["traceEvents"]
        if e["name"] == "session/resume" and names[(e["pid"], e["tid"])] == "session s2"
    )
    assert prompt["ts"] < resume["ts"] + resume["dur"] < prompt["ts"] + prompt["dur"]
    assert names[(prompt["pid"], prompt["tid"])] == "session s2 (overlapping requests 2)"


def test_perfetto_gives_each_trace_a_process_and_leaves_out_ordering_only_ones(
    tmp_path: Path,
) -> None:
    """One pid per timed trace, named after the file and agent; ordering-only traces are left
    out and named in otherData."""
    doc = perfetto(tmp_path, sample(tmp_path / "t.jsonl"), ordering_only(tmp_path / "u.jsonl"))
    processes = {
        e["pid"]: e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert processes == {1: "t.jsonl (exp-agent 3.1)"}
    assert doc["otherData"]["left_out_ordering_only"] == str(tmp_path / "u.jsonl")


def test_perfetto_of_no_trace_is_an_empty_valid_document(tmp_path: Path) -> None:
    """An analysis without records still gives a valid, empty trace-event document."""
    a = analyze(pl.DataFrame(schema=analyze(sample(tmp_path / "t.jsonl")).records.schema))
    doc = trace_events(a)
    jsonschema.validate(doc, EVENT_SCHEMA)
    assert doc["traceEvents"] == []


def test_cli_export_writes_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`acp-trace export` writes the files and names them; a bad format exits 2."""
    trace = str(sample(tmp_path / "t.jsonl"))
    runner = CliRunner()
    result = runner.invoke(
        app, ["export", trace, "--format", "parquet", "-o", str(tmp_path / "pq")]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote ") and result.output.count("\n") == 1
    assert (tmp_path / "pq" / "findings.parquet").is_file()
    result = runner.invoke(app, ["export", trace, "-f", "perfetto", "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "p.json").read_text())["traceEvents"]
    argv = ["acp-trace", "export", trace, "-f", "xlsx", "-o", str(tmp_path / "x")]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "acp-trace: export: Invalid value for '--format' / '-f': 'xlsx' is not one of "
        "'parquet', 'csv', 'perfetto', 'otlp'; see `acp-trace export --help`\n"
    )
