"""Exports for other tools: Parquet and CSV tables, a Chrome/Perfetto trace-event JSON and
OpenTelemetry spans (OTLP/JSON, render/otlp.py); the growing dataset is render/dataset.py.

`parquet` and `csv` write a directory with `records` (the timeline: every record with its
message, pairing, session and update class), `replays` and `findings`. The tables use plain
types only (signed integers, floats, booleans, strings) so that DuckDB, Spark or pandas read
them as they are; CSV JSON-encodes nested columns, rounds floats to six decimals (times are
nanoseconds: milliseconds with six decimals hold them exactly) and neutralizes cells that a
spreadsheet would run as a formula. `perfetto` and `otlp` write one JSON file. Everything written
holds trace contents, so it is private (0600 files, 0700 new directories). A file written
into a folder is named in the folder's manifest (`acp_trace.owned`), so that a later export
may replace it and no other command does.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import polars as pl
from polars._typing import PolarsDataType

from acp_trace.errors import UsageError
from acp_trace.files import output_dir, replacing, wants_directory, write_file
from acp_trace.jsonrpc import json_bytes, json_text
from acp_trace.owned import record
from acp_trace.render.escape import csv_safe
from acp_trace.render.report.formats import csv_ids, maps_as_text, rounded

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

FORMATS = ("parquet", "csv", "perfetto", "otlp")
PERFETTO_NAME = "trace.json"
OTLP_NAME = "spans.json"
WRITER = "export"  # the command named in a folder's manifest (acp_trace.owned)


def export(
    paths: Paths,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    marker_meta: str | None = None,
    source_format: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    redact_content: bool = True,
) -> list[Path]:
    """Read traces and export them; returns the files written."""
    from acp_trace.analysis.front import analyze

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    a = analyze(paths, marker_meta=marker_meta, fmt=source_format, progress=progress)
    return write_export(a, fmt, out, redact_content=redact_content)


def write_export(
    a: Analysis,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    redact_content: bool = True,
    spreadsheet: bool = False,
) -> list[Path]:
    """Export an analysis: a directory of tables (parquet, csv) or one JSON file (perfetto:
    `out`, or `out/trace.json` when `out` is a directory or ends in `/`). Every file holds
    trace contents: 0600, new directories 0700 (`acp_trace.files`). Credentials in free text
    are replaced first (`scrubbed`) unless `redact_content` is false. CSV cells are
    exact, as in Parquet, unless `spreadsheet` (cells that start like a formula neutralized)."""
    if redact_content:
        a = scrubbed(a)
    if fmt in ("perfetto", "otlp"):
        return [_write_json(a, fmt, out)]
    if fmt not in ("parquet", "csv"):
        raise UsageError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    folder = output_dir(out)
    written = []
    for name, df in tables(a).items():
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            with replacing(path) as temp:
                df.write_parquet(temp, statistics=True)
        else:
            write_file(path, csv_text(df, spreadsheet=spreadsheet))
        record(folder, [path.name], WRITER)
        written.append(path)
    return written


def scrubbed(a: Analysis) -> Analysis:
    """The analysis of the same records with credentials in free text replaced as the tap
    replaces them (redaction/records.py), `a` itself when there are none: what every
    output that holds trace contents (export, report, dataset) is made from."""
    from acp_trace.analysis.front import Analysis
    from acp_trace.redaction.records import scrub_records

    records = scrub_records(a.records)
    if records is a.records:
        return a
    return Analysis(records, marker_meta=a.marker_meta, weight=a.weight)


def _write_json(a: Analysis, fmt: str, out: str | os.PathLike[str]) -> Path:
    """The Perfetto trace or the OTLP spans, into `out` (a file) or `out/NAME` (a folder,
    whose manifest then names it as export's)."""
    if fmt == "perfetto":
        from acp_trace.render.perfetto import trace_events

        doc = trace_events(a)
    else:
        from acp_trace.render.otlp import otlp_document

        doc, _left_out = otlp_document(a)
    target = perfetto_target(out, OTLP_NAME if fmt == "otlp" else PERFETTO_NAME)
    write_file(target, json_bytes(doc))
    if wants_directory(out):
        record(target.parent, [target.name], WRITER)
    return target


def made_by_export(path: Path) -> bool:
    """True when the file is a Perfetto trace or OTLP spans that `export` wrote: what
    `export -o FILE` may replace."""
    doc = orjson.loads(path.read_bytes())
    if not isinstance(doc, dict):
        return False
    other = doc.get("otherData")
    if "traceEvents" in doc and isinstance(other, dict):
        return str(other.get("generator", "")).startswith("acp-trace ")
    spans = doc.get("resourceSpans")
    return (
        set(doc) == {"resourceSpans"}
        and isinstance(spans, list)
        and all(
            isinstance(s, dict)
            and all(
                isinstance(sc, dict) and sc.get("scope", {}).get("name") == "acp-trace"
                for sc in s.get("scopeSpans", [])
            )
            for s in spans
        )
    )


def perfetto_target(out: str | os.PathLike[str], name: str = "") -> Path:
    """Where `--format perfetto` (or `otlp`) `-o OUT` writes: OUT/trace.json (spans.json) for
    a directory, else OUT."""
    return output_dir(out) / (name or PERFETTO_NAME) if wants_directory(out) else Path(out)


def csv_text(df: pl.DataFrame, *, spreadsheet: bool = False) -> str:
    """A table as CSV: nested columns as JSON text, floats rounded to the nanosecond, JSON-RPC
    ids tagged with their type (`number:1`, `"1"`: `csv_ids`); with
    `spreadsheet`, cells that start like a formula (`=`, `+`, `-`, `@`) neutralized
    (`acp_trace.render.escape`), else every cell exactly as in Parquet."""
    buffer = io.StringIO()
    flat = csv_ids(json_nested(maps_as_text(rounded(df))))
    (csv_safe(flat) if spreadsheet else flat).write_csv(buffer)
    return buffer.getvalue()


def tables(a: Analysis) -> dict[str, pl.DataFrame]:
    """The exported tables, in portable types."""
    return {
        "records": portable(a.timeline),
        "replays": portable(a.replays),
        "findings": portable(a.findings()),
    }


def portable(df: pl.DataFrame) -> pl.DataFrame:
    """Plain types for any reader: unsigned integers to Int64, categoricals to strings, null
    columns to strings (recursively inside lists and structs)."""
    return df.with_columns(
        pl.col(name).cast(_plain(dtype))
        for name, dtype in df.schema.items()
        if _plain(dtype) != dtype
    )


def _plain(given: PolarsDataType) -> pl.DataType:
    dtype = given if isinstance(given, pl.DataType) else given()
    if dtype in (pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64):
        return pl.Int64()
    if isinstance(dtype, pl.Categorical | pl.Enum) or dtype == pl.Null:
        return pl.String()
    if isinstance(dtype, pl.List):
        return pl.List(_plain(dtype.inner))
    if isinstance(dtype, pl.Struct):
        return pl.Struct({f.name: _plain(f.dtype) for f in dtype.fields})
    return dtype


def json_nested(df: pl.DataFrame) -> pl.DataFrame:
    """Nested (list, struct, array) columns as JSON text, for CSV."""
    nested = [n for n, t in df.schema.items() if isinstance(t, pl.List | pl.Struct | pl.Array)]
    return df.with_columns(
        pl.Series(n, [None if v is None else json_text(v) for v in df[n].to_list()]) for n in nested
    )
