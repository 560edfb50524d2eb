"""The bug-report bundle: DIR/report.md (paste into a GitHub issue), DIR/report.html (the same,
one self-contained file) and the charts beside them (gap.png, latency.png, replay.png).

The report names agents, versions, sessions, methods, outcomes, timings and findings; it never
includes message contents. All of it goes through `document`, which escapes trace text.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from acp_trace import __version__
from acp_trace.analysis.latency import turn_phases
from acp_trace.files import output_dir, write_file
from acp_trace.render import plots
from acp_trace.render.plots._common import untimed_traces
from acp_trace.render.plots.latency import PHASES
from acp_trace.render.report.document import (
    Block,
    Code,
    Heading,
    Image,
    Paragraph,
    Table,
    to_html,
    to_markdown,
)

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

TITLE = "acp-trace report"
CHARTS = {"gap.png": "gap", "replay.png": "replay", "latency.png": "latency"}
MAX_REPLAY_ROWS = 200
MAX_FINDING_ROWS = 100
REPLAY_COLUMNS = {
    "trace": "trace",
    "session": "session",
    "parent_session": "parent",
    "method": "method",
    "request_id": "request id",
    "outcome": "outcome",
    "history_updates": "history updates",
    "response_ms": "response ms",
    "marker_to_response_ms": "marker → response ms",
    "last_history_to_response_ms": "last history → response ms",
}


@dataclass(frozen=True)
class ReportFiles:
    """Where a report went."""

    directory: Path
    markdown: Path
    html: Path
    charts: list[Path]


def report(
    paths: Paths,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    marker_meta: str | None = None,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReportFiles:
    """Read traces and write the report bundle into `out_dir`."""
    from acp_trace.analysis.front import analyze

    a = analyze(paths, marker_meta=marker_meta, fmt=fmt, progress=progress)
    return write_report(a, out_dir, command=command)


def write_report(
    a: Analysis, out_dir: str | os.PathLike[str], *, command: str | None = None
) -> ReportFiles:
    """Write report.md, report.html and the charts of an analysis into `out_dir`."""
    out = output_dir(out_dir)  # 0700 when new: the report quotes trace text
    charts = [plots.save(plots.figure(a, kind), out / name) for name, kind in CHARTS.items()]
    blocks = build_blocks(a, command)
    markdown = write_file(out / "report.md", to_markdown(blocks))
    images = {path.name: path.read_bytes() for path in charts}
    page = write_file(out / "report.html", to_html(blocks, images, TITLE))
    return ReportFiles(out, markdown, page, charts)


def build_blocks(a: Analysis, command: str | None = None) -> list[Block]:
    """The report as document blocks (plain text; the renderers escape it)."""
    return [
        Heading(1, TITLE),
        *_overview(a),
        *_replays(a),
        *_findings(a),
        *_latency(a),
        Heading(2, "Command"),
        Paragraph("This report was made with:"),
        Code(command or "acp_trace.write_report(...)  # the library API"),
    ]


def cell(value: Any) -> str:
    """A table cell: `-` for missing, one decimal for floats (two below 1)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if 0 < abs(value) < 1 else f"{value:.1f}"
    return str(value)


def _table(df: pl.DataFrame, columns: dict[str, str]) -> Table:
    numeric = frozenset(
        i for i, c in enumerate(columns) if df.schema[c].is_numeric() and c != "request_id"
    )
    rows = [[cell(v) for v in row] for row in df.select(list(columns)).iter_rows()]
    return Table(list(columns.values()), rows, numeric)


def _overview(a: Analysis) -> list[Block]:
    traces = a.traces()
    malformed = int(traces["malformed"].sum()) if traces.height else 0
    text = (
        f"acp-trace {__version__} read {traces.height} trace(s): {a.replays.height} replay row(s), "
        f"{malformed} malformed line(s). Charts and tables name agents, sessions, methods and "
        "timings only; no message contents."
    )
    blocks: list[Block] = [Paragraph(text), Heading(2, "Agents")]
    conns = a.timeline.select("trace", "agent", "agent_version", "protocol").unique(
        "trace", maintain_order=True
    )
    per_trace = a.replays.group_by("trace").agg(pl.len().alias("replays"))
    agents = (
        conns.join(per_trace, on="trace", how="left")
        .group_by(["agent", "agent_version", "protocol"], maintain_order=True)
        .agg(pl.len().alias("traces"), pl.col("replays").fill_null(0).sum())
    )
    columns = {"agent": "agent", "agent_version": "version", "protocol": "protocol"}
    blocks.append(_table(agents, {**columns, "traces": "traces", "replays": "replays"}))
    untimed = untimed_traces(a.timeline)
    if untimed:
        names = ", ".join(untimed)
        blocks.append(
            Paragraph(f"Ordering-only traces (no timestamps, left out of charts): {names}")
        )
    return blocks


def _replays(a: Analysis) -> list[Block]:
    replays = a.replays
    blocks: list[Block] = [Heading(2, "Replays")]
    if not replays.height:
        return [*blocks, Paragraph("No replaying session/resume or session/load in these traces.")]
    counts = replays["outcome"].value_counts(sort=True)
    blocks.append(Paragraph("Outcomes: " + ", ".join(f"{o} {n}" for o, n in counts.iter_rows())))
    blocks += _gap_summary(a)
    blocks.append(Image("gap.png", "Replay gap: end of history to response"))
    shown = replays.head(MAX_REPLAY_ROWS)
    blocks.append(_table(shown, REPLAY_COLUMNS))
    if replays.height > shown.height:
        more = replays.height - shown.height
        blocks.append(Paragraph(f"{more} more row(s): see acp-trace replays."))
    blocks += [Heading(3, "Slowest replay"), Image("replay.png", "Timeline of the slowest replay")]
    return blocks


def _gap_summary(a: Analysis) -> list[Block]:
    gaps = plots.gap_table(a.replays, untimed_traces(a.timeline))
    if not gaps.height:
        return [Paragraph("No replay has a measurable gap (no response).")]
    ms = pl.col("gap_ms")
    summary = gaps.group_by(["agent", "agent_version", "source"], maintain_order=True).agg(
        pl.len().alias("n"),
        ms.quantile(0.5, "linear").alias("p50"),
        ms.quantile(0.9, "linear").alias("p90"),
        ms.quantile(0.99, "linear").alias("p99"),
        ms.max().alias("max"),
    )
    summary = summary.with_columns(
        pl.col("source").replace({"marker": "marker", "last_history": "no marker: last history"})
    )
    columns = {"agent": "agent", "agent_version": "version", "source": "gap from", "n": "replays"}
    stats = {q: f"{q} ms" for q in ("p50", "p90", "p99", "max")}
    text = "Gap between the end of the replayed history and the response (ms):"
    return [Paragraph(text), _table(summary, {**columns, **stats})]


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
GROUPED_COLUMNS = {
    "severity": "severity",
    "rule": "rule",
    "count": "count",
    "trace": "first in trace",
    "session": "session",
    "seq": "seq",
}


def _findings(a: Analysis) -> list[Block]:
    findings = a.findings()
    counts = {s: findings.filter(pl.col("severity") == s).height for s in SEVERITY_ORDER}
    text = ", ".join(f"{n} {s}" for s, n in counts.items()) + " (acp-trace check)."
    blocks: list[Block] = [Heading(2, "Findings"), Paragraph(text)]
    if not findings.height:
        return blocks
    blocks.append(_table(grouped_findings(findings), GROUPED_COLUMNS))
    shown = findings.head(MAX_FINDING_ROWS)
    columns = {c: c for c in ("severity", "rule", "trace", "session", "seq", "message")}
    blocks += [Heading(3, "All findings"), _table(shown, columns)]
    if findings.height > shown.height:
        more = findings.height - shown.height
        blocks.append(Paragraph(f"{more} more finding(s): see acp-trace check."))
    return blocks


def grouped_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """Per severity and rule: the count and where the first one is, errors first."""
    severity = pl.col("severity").replace_strict(SEVERITY_ORDER, return_dtype=pl.Int64)
    return (
        findings.group_by(["severity", "rule"], maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("trace").first(),
            pl.col("session").first(),
            pl.col("seq").first(),
        )
        .sort(severity, "rule")
    )


def _latency(a: Analysis) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Latency")]
    requests = a.latency("method")
    if not requests.height:
        return [*blocks, Paragraph("No requests.")]
    stats = {c: c.replace("_ms", " ms") for c in ("p50_ms", "p90_ms", "p99_ms", "max_ms")}
    counts = {
        "method": "method",
        "count": "requests",
        "errors": "errors",
        "unanswered": "unanswered",
    }
    blocks.append(_table(requests, {**counts, **stats}))
    phases = turn_phases(a.turns).filter(pl.col("count") > 0)
    phases = phases.with_columns(pl.col("phase").replace(PHASES)).sort("p50_ms")
    if phases.height:
        blocks.append(Paragraph("Prompt turns, from the session/prompt request (ms):"))
        blocks.append(_table(phases, {"phase": "phase", "count": "turns", **stats}))
    blocks.append(Image("latency.png", "Request latency per method and prompt-turn phases"))
    return blocks
