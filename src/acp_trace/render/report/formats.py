"""Machine formats: JSON, CSV and JUnit XML renderings of the analysis tables.

CSV is data: every cell exactly as in the JSON and Parquet outputs (`@scope/agent` stays
`@scope/agent`, so the three join), unless `spreadsheet` is asked for (`--spreadsheet`, and
the report's replays.csv, which is handed to people who open it in a spreadsheet): then a
cell that a spreadsheet would run as a formula gets a leading `'` (`render.escape.csv_safe`).
One CSV holds one table (polars, DuckDB and spreadsheets read one header)."""

from __future__ import annotations

import io
import math
import re
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import orjson
import polars as pl

from acp_trace.errors import UsageError
from acp_trace.jsonrpc import id_json, json_bytes
from acp_trace.render.escape import csv_safe, json_safe
from acp_trace.render.report.text import format_findings, format_losses, format_table, loss_lines

JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
# Times are taken in nanoseconds: six decimals of a millisecond hold all there is, and rounding
# to them removes the float noise of a division (87.32291099999998 -> 87.322911).
DECIMALS = 6


def rounded(df: pl.DataFrame) -> pl.DataFrame:
    """Float columns (and lists of floats) rounded to DECIMALS, for JSON and CSV."""
    exprs = []
    for name, dtype in df.schema.items():
        if dtype.is_float():
            exprs.append(pl.col(name).round(DECIMALS))
        elif isinstance(dtype, pl.List) and dtype.inner.is_float():
            exprs.append(pl.col(name).list.eval(pl.element().round(DECIMALS)))
    return df.with_columns(exprs) if exprs else df


ID_COLUMNS = ("id", "request_id")  # JSON-RPC ids, held as their JSON text (jsonrpc.id_key)
_JSON_NUMBER = r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$"


def csv_ids(df: pl.DataFrame) -> pl.DataFrame:
    """JSON-RPC ids as CSV writes them, so that a reader that guesses types from the first
    rows (polars, DuckDB) always reads a text column, and `1` and `"1"` stay apart: a string
    id is its JSON text (`"orphan-1"`, `"1"`), a number is `number:` and its JSON text
    (`number:1`, `number:123456789012345678901234567890`), any other value (an invalid id:
    `null`, `true`, an object) `json:` and its JSON text."""
    exprs = []
    for name in ID_COLUMNS:
        if name in df.columns and df.schema[name] == pl.String:
            col = pl.col(name)
            exprs.append(
                pl.when(col.str.starts_with('"'))
                .then(col)
                .when(col.str.contains(_JSON_NUMBER))
                .then(pl.lit("number:") + col)
                .otherwise(pl.lit("json:") + col)
                .alias(name)
            )
    return df.with_columns(exprs) if exprs else df


def rounded_float(value: float) -> float:
    """One float rounded as `rounded` rounds a column (polars' half-to-even on value * 10^6,
    the same float), for a JSON value made one at a time (`watch --format jsonl`)."""
    if not math.isfinite(value) or abs(value) >= 1e15:
        return value
    scale = float(10**DECIMALS)
    return round(value * scale) / scale


def rows_json(df: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows of a table as JSON-ready dicts, floats rounded; JSON-RPC ids go back to their
    own type, as written (an integer beyond 64 bits stays exact); a map column (a list of
    `{kind, bytes}`: `bytes_by_kind`) is the object it stands for."""
    rows = rounded(df).to_dicts()
    maps = [c for c in MAP_COLUMNS if c in df.columns]
    if "request_id" in df.columns or maps:
        for row in rows:
            if row.get("request_id") is not None:
                row["request_id"] = id_json(row["request_id"])
            for name in maps:
                row[name] = as_object(row[name])
    return rows


# Columns held as a list of {kind, bytes} (Parquet's map), shown as an object in JSON and CSV.
MAP_COLUMNS = ("bytes_by_kind",)


def as_object(pairs: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """A map column's value as the JSON object it stands for: `{"tool_call_update": 9120}`."""
    return None if pairs is None else {p["kind"]: p["bytes"] for p in pairs}


def maps_as_text(df: pl.DataFrame) -> pl.DataFrame:
    """Map columns as their JSON object's text, for CSV."""
    maps = [c for c in MAP_COLUMNS if c in df.columns]
    return df.with_columns(
        pl.Series(n, [_object_text(v) for v in df[n].to_list()], dtype=pl.String) for n in maps
    )


def _object_text(pairs: list[dict[str, Any]] | None) -> str | None:
    found = as_object(pairs)
    return None if found is None else json_bytes(found).decode()


def to_json(value: Any) -> str:
    """Indented JSON; characters a terminal would act on (C1, bidi controls) as escapes."""
    return json_safe(json_bytes(value, indent=True).decode())


def to_csv(df: pl.DataFrame, *, spreadsheet: bool = False) -> str:
    """CSV of the flat columns, floats rounded: every cell as it is (data), or with cells that
    start like a formula neutralized (`spreadsheet`)."""
    df = maps_as_text(df)
    flat = csv_ids(
        rounded(
            df.select([c for c, t in df.schema.items() if not isinstance(t, pl.List | pl.Struct)])
        )
    )
    buf = io.StringIO()
    (csv_safe(flat) if spreadsheet else flat).write_csv(buf)
    return buf.getvalue()


def frame(
    df: pl.DataFrame, fmt: str, width: int | None = None, *, spreadsheet: bool = False
) -> str:
    """One table as `table` (aligned text, fitted to `width`), `json` (an array of objects) or
    `csv` (exact, or safe for a spreadsheet)."""
    if fmt == "table":
        return format_table(df, width=width)
    if fmt == "json":
        return to_json(rows_json(df))
    if fmt == "csv":
        return to_csv(df, spreadsheet=spreadsheet)
    raise UsageError(f"--format {fmt}: expected table, json or csv")


def frames(tables: dict[str, pl.DataFrame], fmt: str) -> str:
    """Several tables: one JSON object keyed by name, or text tables each under its name. CSV
    holds one table: name it (UsageError)."""
    if fmt == "json":
        return to_json({k: rows_json(v) for k, v in tables.items()})
    if fmt == "csv":
        raise UsageError(f"--format csv holds one table: choose one of {', '.join(tables)}")
    return "".join(f"{name}\n{frame(df, fmt)}\n" for name, df in tables.items())


def check_output(analysis: Any, findings: pl.DataFrame, fmt: str) -> str:
    """The output of `acp-trace check` in `text`, `json` or `junit`; the inputs skipped while
    reading (files that are no trace) are listed apart from the traces."""

    skipped = analysis.skipped
    traces = analysis.traces().filter(~pl.col("trace").is_in(skipped["trace"].implode()))
    losses = analysis.losses
    if fmt == "text":
        return format_losses(losses) + format_findings(findings, traces, skipped.height)
    if fmt == "json":
        doc = {
            "findings": _with_tck(rows_json(findings)),
            "replays": rows_json(analysis.replays),
            "traces": [{"path": t, "records": n, "malformed": m} for t, n, m in traces.iter_rows()],
            "input_problems": [{"path": t, "problem": p} for t, p in skipped.iter_rows()],
            "recording_losses": rows_json(losses),
        }
        return _json_text(doc)
    if fmt == "junit":
        return junit(findings, traces, skipped, losses)
    raise UsageError(f"--format {fmt}: expected text, json or junit")


def _with_tck(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding with `tck`: the acp-tck requirement its rule checks, or null."""
    from acp_trace.analysis.checks.catalogue import TCK

    return [{**r, "tck": TCK.get(r["rule"])} for r in rows]


def _json_text(doc: Any) -> str:
    """Indented JSON; text orjson refuses (a lone surrogate from a trace) is written escaped."""
    return json_bytes(doc, indent=True).decode()


def junit(
    findings: pl.DataFrame,
    traces: pl.DataFrame,
    skipped: pl.DataFrame | None = None,
    losses: pl.DataFrame | None = None,
) -> str:
    """JUnit XML: a testsuite per trace, a testcase per rule and side (the side is the
    testcase's classname: agent, client or both); error findings fail the case. The inputs
    skipped while reading are skipped testcases of a suite of their own. What a trace's
    recording lacks is its suite's `system-err`."""
    lacking = {} if losses is None else {r["trace"]: r for r in losses.iter_rows(named=True)}
    from acp_trace.analysis.checks import RULES

    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="acp-trace check">\n']
    for trace in traces["trace"].to_list():
        mine = findings.filter(pl.col("trace") == trace)
        cases: list[tuple[str, str, pl.DataFrame]] = []
        for rule_id, rule in RULES.items():
            found = mine.filter(pl.col("rule") == rule_id)
            sides = found["side"].unique(maintain_order=True).to_list() or [rule.side]
            cases.extend((rule_id, side, found.filter(pl.col("side") == side)) for side in sides)
        failing = sum(1 for _, _, f in cases if f.filter(pl.col("severity") == "error").height)
        out.append(f'  <testsuite name={_attr(trace)} tests="{len(cases)}" failures="{failing}">\n')
        out.extend(_testcase(rule_id, side, found) for rule_id, side, found in cases)
        if trace in lacking:
            note = "the recording lacks lines: " + "; ".join(loss_lines(lacking[trace]))
            out.append(f"    <system-err>{_text(note)}</system-err>\n")
        out.append("  </testsuite>\n")
    if skipped is not None and skipped.height:
        out.append(
            f'  <testsuite name="acp-trace inputs" tests="{skipped.height}" failures="0" '
            f'skipped="{skipped.height}">\n'
        )
        for path, problem in skipped.iter_rows():
            out.append(
                f'    <testcase classname="input" name={_attr(path)}>\n'
                f"      <skipped message={_attr(f'not read: {problem}')}/>\n    </testcase>\n"
            )
        out.append("  </testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


def _testcase(rule_id: str, side: str, found: pl.DataFrame) -> str:
    from acp_trace.analysis.checks.catalogue import TCK

    head = f"    <testcase classname={_attr(side)} name={_attr(rule_id)}"
    tck = TCK.get(rule_id)
    if tck is not None:  # the acp-tck requirement the rule checks, as a testcase property
        head += f'>\n      <properties><property name="tck" value={_attr(tck)}/></properties'
    if not found.height:
        return head + ("/>\n" if tck is None else ">\n    </testcase>\n")
    lines = "\n".join(
        f"{f['severity']} at seq {f['seq']} in {f['trace']} (session {f['session']}): "
        f"{f['message']}"
        for f in found.iter_rows(named=True)
    )
    errors = found.filter(pl.col("severity") == "error")
    if errors.height:
        first = _attr(errors["message"][0])
        return (
            f"{head}>\n      <failure message={first}>{_text(lines)}</failure>\n    </testcase>\n"
        )
    return f"{head}>\n      <system-out>{_text(lines)}</system-out>\n    </testcase>\n"


# Characters XML 1.0 cannot hold (C0 controls but tab and newline, lone surrogates, U+FFFE/F)
# and those it discourages or that act on a terminal (DEL, C1 controls, bidi overrides).
_NOT_XML = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def _xml_safe(text: str) -> str:
    """Trace text as XML 1.0 can hold it: what it cannot is shown as `\\uNNNN`."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text))


def _attr(text: str) -> str:
    """A quoted XML attribute value (newlines and tabs kept as character references)."""
    return quoteattr(_xml_safe(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _text(text: str) -> str:
    """XML character data (`]]>` cannot end a section: `>` is escaped)."""
    return escape(_xml_safe(text))
