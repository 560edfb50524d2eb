"""`acp-trace diff` for people and machines: a terminal text, a Markdown PR comment, JSON."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.analysis.diff import Diff
from acp_trace.quantities import count, counted, fixed, percent
from acp_trace.render.report.document import Block, Bullets, Heading, Table, to_markdown
from acp_trace.render.report.formats import rows_json, to_json
from acp_trace.render.report.tables import cell
from acp_trace.render.report.text import format_table

METRIC_COLUMNS = {
    "metric": "metric",
    "agent": "agent",
    "method": "method",
    "stat": "stat",
    "base_ms": "BASE ms",
    "new_ms": "NEW ms",
    "change_ms": "change ms",
    "change_pct": "change %",
    "ci": "95% CI ms",
    "verdict": "verdict",
    "base_n": "BASE n",
    "new_n": "NEW n",
}


def _num(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "-"
    return fixed(value, 1, sign=sign)


def _ci(low: float | None, high: float | None) -> str:
    return (
        "-"
        if low is None or high is None
        else f"[{fixed(low, 1, sign=True)}, {fixed(high, 1, sign=True)}]"
    )


def metric_rows(d: Diff) -> list[list[str]]:
    """The metrics table as text cells, in METRIC_COLUMNS order."""
    rows = []
    for r in d.metrics.iter_rows(named=True):
        rows.append(
            [
                r["metric"],
                r["agent"],
                r["method"],
                r["stat"],
                _num(r["base_ms"]),
                _num(r["new_ms"]),
                _num(r["change_ms"], sign=True),
                "-" if r["change_pct"] is None else percent(r["change_pct"]),
                _ci(r["ci_low_ms"], r["ci_high_ms"]),
                r["verdict"],
                count(r["base_n"]),
                count(r["new_n"]),
            ]
        )
    return rows


def headline(d: Diff) -> str:
    """One line: how many regressions, or that none was found."""
    found = d.regressions
    if not found:
        return "no regression found"
    return f"{counted(len(found), 'regression')} found"


NAMES = ("metric", "agent", "method", "agent_version", "session", "rule", "trace", "request_id")


def _fitted(df: pl.DataFrame, width: int | None) -> str:
    """A table fitted to `width` (None: whole): only names and ids are shortened."""
    return format_table(df, width=width, fold=[c for c in df.columns if c in NAMES])


def _metrics_text(frame: pl.DataFrame, width: int | None) -> str:
    """The metrics table: a section per metric, agent and method (named once above its rows
    with the sample counts of both sides, shortened to `width`), a row per statistic."""
    from acp_trace.render.report.sections_text import sectioned
    from acp_trace.render.report.tables import to_text

    keys = ["metric", "agent", "method", "samples"]
    return to_text(sectioned(frame, keys, width=width), width)


def format_diff_text(d: Diff, width: int | None = None) -> str:
    """The terminal rendering: the headline, the regressions, then every table, fitted to
    `width` (None: as wide as they are)."""
    out = [f"acp-trace diff: {headline(d)}\n"]
    out += [f"  - {line}\n" for line in d.regressions]
    ci = f"{d.options.confidence:.0%} CI ms"
    cols = [ci if c == "ci" else name for c, name in METRIC_COLUMNS.items()]
    frame = pl.DataFrame(metric_rows(d), schema=cols, orient="row")
    frame = frame.with_columns(
        pl.format("(samples: BASE {}, NEW {})", "BASE n", "NEW n").alias("samples")
    ).drop("BASE n", "NEW n")  # one pair per section: the same for each statistic
    out.append("\nreplay gap and request latency (NEW - BASE):\n")
    out.append(
        _metrics_text(frame, width) if frame.height else "(no replay or request on either side)\n"
    )
    if d.flips.height:
        out.append("\noutcome changes of the same request:\n")
        out.append(_fitted(d.flips, width))
    changed = d.outcomes.filter(pl.col("base_count") != pl.col("new_count"))
    if changed.height:
        out.append("\noutcome counts that changed:\n")
        out.append(_fitted(changed, width))
    moved = d.findings.filter(pl.col("change") != "same")
    if moved.height:
        out.append("\nfindings by rule:\n")
        out.append(_fitted(moved, width))
    return "".join(out)


def diff_blocks(d: Diff) -> list[Block]:
    """The Markdown document (a PR comment): headline, regressions, tables."""
    blocks: list[Block] = [Heading(2, f"acp-trace diff: {headline(d)}")]
    if d.regressions:
        blocks.append(Bullets(list(d.regressions)))
    ci = f"{d.options.confidence:.0%} CI ms"
    cols = [ci if c == "ci" else name for c, name in METRIC_COLUMNS.items()]
    blocks.append(Table(cols, metric_rows(d), frozenset({4, 5, 6, 7, 10, 11})))
    if d.flips.height:
        blocks.append(Heading(3, "Outcome changes of the same request"))
        blocks.append(_table(d.flips))
    moved = d.findings.filter(pl.col("change") != "same")
    if moved.height:
        blocks.append(Heading(3, "Findings by rule"))
        blocks.append(_table(moved))
    return blocks


def _table(df: pl.DataFrame) -> Table:
    cells = [
        [cell(v, name) for name, v in zip(df.columns, row, strict=True)] for row in df.iter_rows()
    ]
    return Table(df.columns, cells)


def format_diff_markdown(d: Diff) -> str:
    return to_markdown(diff_blocks(d))


def diff_json(d: Diff) -> dict[str, Any]:
    """Every table as rows, plus `regressions` (sentences) and `regression` (bool)."""
    return {
        "regression": bool(d.regressions),
        "regressions": d.regressions,
        "options": {
            "threshold_pct": d.options.threshold_pct,
            "threshold_ms": d.options.threshold_ms,
            "confidence": d.options.confidence,
            "resamples": d.options.resamples,
            "min_samples": d.options.min_samples,
            "seed": d.options.seed,
        },
        "metrics": rows_json(d.metrics),
        "flips": rows_json(d.flips),
        "outcomes": rows_json(d.outcomes),
        "findings": rows_json(d.findings),
    }


def format_diff_json(d: Diff) -> str:
    """Every table as JSON, floats rounded like every JSON output (six decimals of a ms)."""
    return to_json(diff_json(d))


def format_diff(d: Diff, fmt: str, width: int | None = None) -> str:
    """`text` (fitted to `width`), `json` or `markdown`."""
    if fmt == "text":
        return format_diff_text(d, width)
    return format_diff_json(d) if fmt == "json" else format_diff_markdown(d)
