"""Exports for other tools: Parquet and CSV tables, and a Chrome/Perfetto trace-event JSON.

`parquet` and `csv` write a directory with `records` (the timeline: every record with its
message, pairing, session and update class), `replays` and `findings`. The tables use plain
types only (signed integers, floats, booleans, strings) so that DuckDB, Spark or pandas read
them as they are; CSV JSON-encodes nested columns. `perfetto` writes one JSON file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import polars as pl
from polars._typing import PolarsDataType

from acp_trace.errors import UsageError

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

FORMATS = ("parquet", "csv", "perfetto", "otlp")


def export(
    paths: Paths,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    marker_meta: str | None = None,
    source_format: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Read traces and export them; returns the files written."""
    from acp_trace.analysis.front import analyze

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    a = analyze(paths, marker_meta=marker_meta, fmt=source_format, progress=progress)
    return write_export(a, fmt, out)


def write_export(a: Analysis, fmt: str, out: str | os.PathLike[str]) -> list[Path]:
    """Export an analysis: a directory of tables (parquet, csv) or one JSON file (perfetto)."""
    target = Path(out)
    if fmt == "otlp":
        from acp_trace.files import write_file
        from acp_trace.render.otlp import otlp_document

        doc, _left_out = otlp_document(a)
        return [write_file(target, orjson.dumps(doc))]
    if fmt == "perfetto":
        from acp_trace.render.perfetto import trace_events

        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(orjson.dumps(trace_events(a)))
        return [target]
    if fmt not in ("parquet", "csv"):
        raise UsageError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target}: --format {fmt} writes a directory, and this is a file")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in tables(a).items():
        path = target / f"{name}.{fmt}"
        if fmt == "parquet":
            df.write_parquet(path, statistics=True)
        else:
            json_nested(df).write_csv(path)
        written.append(path)
    return written


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
        pl.Series(n, [None if v is None else orjson.dumps(v).decode() for v in df[n].to_list()])
        for n in nested
    )
