"""Machine formats: JSON, CSV and JUnit XML renderings of the analysis tables."""

from __future__ import annotations

import io
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import orjson
import polars as pl

from acp_trace.errors import UsageError
from acp_trace.jsonrpc import id_json
from acp_trace.render.report.text import format_findings, format_table

JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def rows_json(df: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows of a table as JSON-ready dicts; JSON-RPC ids go back to their own type, as
    written (an integer beyond 64 bits stays exact)."""
    rows = df.to_dicts()
    if "request_id" in df.columns:
        for row in rows:
            if row["request_id"] is not None:
                row["request_id"] = id_json(row["request_id"])
    return rows


def frame(df: pl.DataFrame, fmt: str, table: str | None = None) -> str:
    """One table as `table` (aligned text), `json` (an array of objects) or `csv`."""
    if fmt == "table":
        return format_table(df)
    if fmt == "json":
        return orjson.dumps(rows_json(df), option=JSON_OPTS).decode()
    if fmt == "csv":
        flat = df.select(
            [c for c, t in df.schema.items() if not isinstance(t, pl.List | pl.Struct)]
        )
        buf = io.StringIO()
        flat.write_csv(buf)
        return buf.getvalue()
    raise UsageError(f"--format {fmt}: expected table, json or csv")


def frames(tables: dict[str, pl.DataFrame], fmt: str) -> str:
    """Several tables: one JSON object keyed by name, or CSV sections with a `# name` line."""
    if fmt == "json":
        return orjson.dumps({k: rows_json(v) for k, v in tables.items()}, option=JSON_OPTS).decode()
    if fmt == "csv":
        return "".join(f"# {name}\n{frame(df, 'csv')}" for name, df in tables.items())
    return "".join(f"{name}\n{frame(df, fmt)}\n" for name, df in tables.items())


def check_output(analysis: Any, findings: pl.DataFrame, fmt: str) -> str:
    """The output of `acp-trace check` in `text`, `json` or `junit`."""
    traces = analysis.traces()
    if fmt == "text":
        return format_findings(findings, traces)
    if fmt == "json":
        doc = {
            "findings": rows_json(findings),
            "replays": rows_json(analysis.replays),
            "traces": [{"path": t, "records": n, "malformed": m} for t, n, m in traces.iter_rows()],
        }
        return orjson.dumps(doc, option=JSON_OPTS).decode()
    if fmt == "junit":
        return junit(findings, traces)
    raise UsageError(f"--format {fmt}: expected text, json or junit")


def junit(findings: pl.DataFrame, traces: pl.DataFrame) -> str:
    """JUnit XML: a testsuite per trace, a testcase per rule; error findings fail the case."""
    from acp_trace.analysis.checks import RULES

    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="acp-trace check">\n']
    for trace in traces["trace"].to_list():
        mine = findings.filter(pl.col("trace") == trace)
        failing = mine.filter(pl.col("severity") == "error")["rule"].n_unique()
        out.append(
            f'  <testsuite name={quoteattr(trace)} tests="{len(RULES)}" failures="{failing}">\n'
        )
        for rule_id in RULES:
            out.append(_testcase(trace, rule_id, mine.filter(pl.col("rule") == rule_id)))
        out.append("  </testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


def _testcase(trace: str, rule_id: str, found: pl.DataFrame) -> str:
    head = f"    <testcase classname={quoteattr(trace)} name={quoteattr(rule_id)}"
    if not found.height:
        return head + "/>\n"
    lines = "\n".join(
        f"{f['severity']} at seq {f['seq']} (session {f['session']}): {f['message']}"
        for f in found.iter_rows(named=True)
    )
    errors = found.filter(pl.col("severity") == "error")
    if errors.height:
        first = escape(errors["message"][0])
        return f"{head}>\n      <failure message={quoteattr(first)}>{escape(lines)}</failure>\n    </testcase>\n"
    return f"{head}>\n      <system-out>{escape(lines)}</system-out>\n    </testcase>\n"
