"""The sections of the bug report, as document blocks, in the order a reader of the issue
needs them: what was read and the headline, agents with their outcomes and gaps (gap columns
first), the findings grouped by rule, the slowest replay, latency, files skipped, the command,
and last the per-replay table (capped in Markdown, whole in HTML and replays.csv).

Every table is capped by `Limits`, and every cell too, so the Markdown stays under GitHub's
limit for an issue whatever the input; what a cap leaves out is counted in a line below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from acp_trace import __version__
from acp_trace.analysis.latency import turn_phases
from acp_trace.render import plots
from acp_trace.render.plots._common import ms, natural, plural, untimed_traces
from acp_trace.render.plots.gap import FALLBACK, MARKER, MIN_REPLAYS, with_gap
from acp_trace.render.plots.latency import PHASES
from acp_trace.render.report.document import Block, Code, Heading, Image, Paragraph, Table
from acp_trace.trace.reader import skipped_inputs

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

TITLE = "acp-trace report"
NO_GAP = "no gap"
SOURCE_NAMES = {MARKER: "marker", FALLBACK: "last history (no marker)", NO_GAP: "-"}
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Limits:
    """Rows per table and characters per cell; None: no cap."""

    replays: int | None = None
    agents: int | None = None
    findings: int | None = None
    latency: int | None = None
    skipped: int | None = None
    cell: int | None = None
    full: bool = False  # add the tables only HTML has room for (every finding)

    def scaled(self, factor: float) -> Limits:
        """The same caps, `factor` times as many rows (a report that must shrink)."""

        def part(n: int | None) -> int | None:
            return None if n is None else max(1, int(n * factor))

        return Limits(
            part(self.replays),
            part(self.agents),
            part(self.findings),
            part(self.latency),
            part(self.skipped),
            self.cell,
            self.full,
        )


MARKDOWN = Limits(replays=25, agents=20, findings=30, latency=20, skipped=10, cell=72)
HTML = Limits(
    replays=20_000, agents=1_000, findings=20_000, latency=1_000, skipped=1_000, full=True
)


@dataclass
class Context:
    """An analysis with what every section needs: short trace names, the caps."""

    a: Analysis
    limits: Limits
    names: dict[str, str]
    skipped: pl.DataFrame

    def trace(self, value: str | None) -> str:
        return "-" if value is None else self.names.get(value, value)

    def cell(self, value: Any) -> str:
        """A table cell: `-` for missing, floats to the data's precision, long text cut in
        the middle (both ends of an id tell it apart)."""
        if value is None:
            return "-"
        if isinstance(value, float):
            return ms(value).removesuffix(" ms")
        text = str(value)
        limit = self.limits.cell
        if limit is not None and len(text) > limit:
            head = (limit - 1) // 2
            text = text[:head] + "…" + text[len(text) - (limit - 1 - head) :]
        return text

    def table(self, columns: list[str], rows: list[list[Any]], numeric: set[int]) -> Table:
        return Table(columns, [[self.cell(v) for v in row] for row in rows], frozenset(numeric))


def context(a: Analysis, limits: Limits) -> Context:
    skipped = skipped_inputs(a.records)
    traces = a.traces()["trace"].to_list() if a.records.height else []
    return Context(a, limits, relative_names(traces), skipped)


def relative_names(traces: list[str]) -> dict[str, str]:
    """Each trace named relative to the folder all of them share (`dir/a.jsonl`, `b.jsonl#2`),
    never by an absolute path: a report is handed to strangers."""
    files = {t: os.path.abspath(t.split("#", 1)[0]) for t in traces}
    try:
        root = os.path.commonpath([os.path.dirname(f) for f in files.values()]) if files else ""
    except ValueError:  # on different drives
        root = ""
    out = {}
    for trace, file in files.items():
        rest = trace[len(trace.split("#", 1)[0]) :]
        shown = os.path.relpath(file, root) if root else os.path.basename(file)
        out[trace] = PurePath(shown).as_posix() + rest
    return out


def capped(
    ctx: Context, df: pl.DataFrame, limit: int | None, what: str
) -> tuple[pl.DataFrame, list[Block]]:
    """At most `limit` rows, and a line saying how many were left out and where they are."""
    if limit is None or df.height <= limit:
        return df, []
    more = df.height - limit
    return df.head(limit), [Paragraph(f"{more:,} more {what}: {WHERE[what]}.")]


WHERE = {
    "agent rows": "see acp-trace replays",
    "rules": "see acp-trace check",
    "findings": "see acp-trace check",
    "latency rows": "see acp-trace latency --by agent",
    "skipped files": "acp-trace summary lists them all",
    "replay rows": "every row is in report.html and replays.csv beside this report",
}


# ---------------------------------------------------------------- the key facts


def gap_rows(a: Analysis, skipped: pl.DataFrame) -> pl.DataFrame:
    """Per agent version and gap source: replays, outcomes, traces, protocols and the gap's
    p50, p90 (from `MIN_REPLAYS[90]` replays) and max; agents without replays too."""
    replays = with_gap(a.replays, untimed_traces(a.timeline))
    replays = replays.with_columns(pl.col("source").fill_null(NO_GAP))
    out = []
    groups = replays.group_by("agent", "agent_version", "source", maintain_order=True)
    for (agent, version, source), part in groups:
        values = part["gap_ms"].drop_nulls().to_numpy().astype(np.float64)
        counts = part["outcome"].value_counts(sort=True, name="n").rows()
        out.append(
            {
                "agent": agent,
                "agent_version": version,
                "source": source,
                "replays": part.height,
                "outcomes": ", ".join(f"{o} {n}" for o, n in counts),
                "traces": part["trace"].n_unique(),
                "protocol": _protocols(part["protocol"]),
                "p50": _quantile(values, 50),
                "p90": _quantile(values, 90) if values.size >= MIN_REPLAYS[90] else None,
                "max": float(values.max()) if values.size else None,
            }
        )
    seen = {(r["agent"], r["agent_version"]) for r in out}
    conns = a.timeline.filter(~pl.col("trace").is_in(skipped["trace"].implode()))
    for (agent, version), part in conns.group_by("agent", "agent_version", maintain_order=True):
        if (agent, version) not in seen:
            out.append(
                {
                    "agent": agent,
                    "agent_version": version,
                    "source": NO_GAP,
                    "replays": 0,
                    "outcomes": "-",
                    "traces": part["trace"].n_unique(),
                    "protocol": _protocols(part["protocol"]),
                    "p50": None,
                    "p90": None,
                    "max": None,
                }
            )
    out.sort(key=lambda r: (natural(r["agent"]), natural(r["agent_version"]), r["source"]))
    return pl.DataFrame(out, schema=GAP_SCHEMA)


GAP_SCHEMA = {
    "agent": pl.String, "agent_version": pl.String, "source": pl.String, "replays": pl.Int64,
    "outcomes": pl.String, "traces": pl.Int64, "protocol": pl.String, "p50": pl.Float64,
    "p90": pl.Float64, "max": pl.Float64,
}  # fmt: skip


def _quantile(values: np.ndarray[Any, Any], q: int) -> float | None:
    return float(np.percentile(values, q, method="linear")) if values.size else None


def _protocols(column: pl.Series) -> str:
    found = sorted({int(p) for p in column.drop_nulls().to_list()})
    return ", ".join(f"v{p}" for p in found) or "-"


def overview(ctx: Context) -> list[Block]:
    """What was read, the headline, and the agents table with the gaps first."""
    a = ctx.a
    rows = gap_rows(a, ctx.skipped)
    traces = a.traces().filter(~pl.col("trace").is_in(ctx.skipped["trace"].implode()))
    malformed = int(traces["malformed"].sum()) if traces.height else 0
    read = (
        f"acp-trace {__version__} read {traces.height:,} {plural(traces.height, 'trace')} "
        f"({malformed:,} malformed {plural(malformed, 'line')}"
        + (
            f", {ctx.skipped.height:,} {plural(ctx.skipped.height, 'file')} skipped"
            if ctx.skipped.height
            else ""
        )
        + "). Traces are named relative to the folder they share. Charts and tables name "
        "agents, sessions, methods and timings only, never message contents."
    )
    shown, more = capped(ctx, rows, ctx.limits.agents, "agent rows")
    columns = ["gap p50 ms", "gap p90 ms", "gap max ms", "agent", "version", "gap from",
               "replays", "outcomes", "traces", "protocol"]  # fmt: skip
    table_rows = [
        [r["p50"], r["p90"], r["max"], r["agent"], r["agent_version"], SOURCE_NAMES[r["source"]],
         r["replays"], r["outcomes"], r["traces"], r["protocol"]]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    note = (
        "The gap: from the replay_complete marker to the response; without a marker, from the "
        f'last replayed history update ("last history"). p90 from {MIN_REPLAYS[90]} replays on.'
    )
    return [
        Heading(1, TITLE),
        Paragraph(headline(ctx)),
        Paragraph(read),
        Heading(2, "Agents, outcomes and gaps"),
        ctx.table(columns, table_rows, {0, 1, 2, 6, 8}),
        *more,
        Paragraph(note),
        Image("gap.png", "Replay gap per agent version"),
    ]


def agent_name(agent: str | None, version: str | None) -> str:
    """`name version`, or `unknown agent` (plain text: the renderers escape it)."""
    name = agent or "unknown agent"
    return f"{name} {version}" if version else name


def headline(ctx: Context) -> str:
    """One sentence with the answer: the replay, or how many and the slowest gap."""
    a = ctx.a
    gaps = plots.gap_table(a.replays, untimed_traces(a.timeline))
    if not a.replays.height:
        return "No replaying session/resume or session/load in these traces."
    if a.replays.height == 1:
        r = a.replays.row(0, named=True)
        who = agent_name(r["agent"], r["agent_version"])
        text = f"1 replay: {r['method']} by {who}, outcome {r['outcome']}"
        if gaps.height:
            g = gaps.row(0, named=True)
            since = "the marker" if g["source"] == MARKER else "the last history update (no marker)"
            text += f"; gap {ms(g['gap_ms'])} from {since} to the response"
        if r["response_ms"] is not None:
            text += f"; response after {ms(r['response_ms'])}"
        return text + "."
    counts = a.replays["outcome"].value_counts(sort=True, name="n").rows()
    agents = a.replays.select("agent", "agent_version").unique().height
    text = (
        f"{a.replays.height:,} replays of {agents} agent {plural(agents, 'version')}; outcomes: "
        + ", ".join(f"{o} {n}" for o, n in counts)
    )
    if gaps.height:
        g = gaps.sort("gap_ms", descending=True).row(0, named=True)
        who = agent_name(g["agent"], g["agent_version"])
        text += f"; the longest gap {ms(g['gap_ms'])} ({who})"
    return text + "."


# ---------------------------------------------------------------- findings


def findings(ctx: Context) -> list[Block]:
    """Counts per severity, then per rule (errors first): how many, in how many traces, and
    the first one with its message. HTML adds every finding."""
    found = ctx.a.findings()
    counts = {s: found.filter(pl.col("severity") == s).height for s in SEVERITY_ORDER}
    text = ", ".join(f"{n} {s}" for s, n in counts.items()) + " (acp-trace check)."
    blocks: list[Block] = [Heading(2, "Findings by rule"), Paragraph(text)]
    if not found.height:
        return blocks
    grouped, more = capped(ctx, grouped_findings(found), ctx.limits.findings, "rules")
    rows = [
        [r["severity"], r["rule"], r["count"], r["traces"], ctx.trace(r["trace"]), r["session"],
         r["seq"], r["message"]]
        for r in grouped.iter_rows(named=True)
    ]  # fmt: skip
    columns = ["severity", "rule", "count", "traces", "first in trace", "session", "seq", "message"]
    blocks += [ctx.table(columns, rows, {2, 3, 6}), *more]
    if ctx.limits.full:
        every, rest = capped(ctx, found, ctx.limits.findings, "findings")
        rows = [
            [r["severity"], r["rule"], ctx.trace(r["trace"]), r["session"], r["seq"], r["message"]]
            for r in every.iter_rows(named=True)
        ]
        columns = ["severity", "rule", "trace", "session", "seq", "message"]
        blocks += [Heading(3, "Every finding"), ctx.table(columns, rows, {4}), *rest]
    return blocks


def grouped_findings(found: pl.DataFrame) -> pl.DataFrame:
    """Per severity and rule: the count, the traces, and the first one, errors first."""
    severity = pl.col("severity").replace_strict(SEVERITY_ORDER, return_dtype=pl.Int64)
    return (
        found.group_by(["severity", "rule"], maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("trace").n_unique().alias("traces"),
            pl.col("trace").first(),
            pl.col("session").first(),
            pl.col("seq").first(),
            pl.col("message").first(),
        )
        .sort(severity, "rule")
    )


# ---------------------------------------------------------------- the rest


def slowest(ctx: Context) -> list[Block]:
    """The replay chart: which replay it shows and how to draw another."""
    a = ctx.a
    timed = a.replays.filter(
        pl.col("response_ms").is_not_null(),
        ~pl.col("trace").is_in(untimed_traces(a.timeline)),
        pl.col("parent_session").is_null(),
    )
    if not timed.height:
        return []
    r = timed.sort("response_ms", descending=True).row(0, named=True)
    text = (
        f"The replay with the longest response ({ms(r['response_ms'])}): {r['method']} of "
        f"session {r['session']} (request id {r['request_id']}) in {ctx.trace(r['trace'])}. "
        "Another one: acp-trace plot TRACE -o replay.png --kind replay --session ID."
    )
    return [
        Heading(2, "Slowest replay"),
        Paragraph(text),
        Image("replay.png", "Timeline of the slowest replay"),
    ]


LATENCY_COLUMNS = ["agent", "version", "method", "requests", "errors", "unanswered",
                   "p50 ms", "p90 ms", "max ms"]  # fmt: skip


def latency(ctx: Context) -> list[Block]:
    """Request latency per agent version and method, then the prompt-turn phases in the order
    they happen."""
    a = ctx.a
    blocks: list[Block] = [Heading(2, "Latency")]
    requests = a.latency("agent").filter(pl.col("method").is_not_null())
    if not requests.height:
        return [*blocks, Paragraph("No requests.")]
    shown, more = capped(ctx, requests, ctx.limits.latency, "latency rows")
    rows = [
        [r["agent"], r["agent_version"], r["method"], r["count"], r["errors"], r["unanswered"],
         r["p50_ms"], r["p90_ms"], r["max_ms"]]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    blocks += [ctx.table(LATENCY_COLUMNS, rows, {3, 4, 5, 6, 7, 8}), *more]
    order = {name: i for i, name in enumerate(PHASES)}
    phases = turn_phases(a.turns, "agent").filter(pl.col("count") > 0)
    if phases.height:
        phases = phases.sort(
            pl.col("phase").replace_strict(order, return_dtype=pl.Int64), "agent", "agent_version"
        )
        rows = [
            [PHASES[r["phase"]], r["agent"], r["agent_version"], r["count"], r["p50_ms"],
             r["p90_ms"], r["max_ms"]]
            for r in phases.iter_rows(named=True)
        ]  # fmt: skip
        columns = ["phase", "agent", "version", "turns", "p50 ms", "p90 ms", "max ms"]
        blocks.append(
            Paragraph("Prompt turns, ms after the session/prompt request, in time order:")
        )
        blocks.append(ctx.table(columns, rows, {3, 4, 5, 6}))
    blocks.append(Image("latency.png", "Request latency per method and prompt-turn phases"))
    return blocks


def inputs(ctx: Context) -> list[Block]:
    """The files passed over while reading, and the traces the charts leave out."""
    blocks: list[Block] = []
    if ctx.skipped.height:
        shown, more = capped(ctx, ctx.skipped, ctx.limits.skipped, "skipped files")
        rows = [[ctx.trace(t), problem] for t, problem in shown.iter_rows()]
        blocks += [
            Heading(2, "Files skipped"),
            Paragraph(
                f"{ctx.skipped.height:,} {plural(ctx.skipped.height, 'file')} read as no trace:"
            ),
            ctx.table(["file", "problem"], rows, set()),
            *more,
        ]
    untimed = untimed_traces(ctx.a.timeline)
    if untimed:
        names = ", ".join(ctx.cell(ctx.trace(t)) for t in untimed[: ctx.limits.skipped or None])
        left = len(untimed) - len(untimed[: ctx.limits.skipped or None])
        tail = f" and {left:,} more" if left else ""
        blocks.append(
            Paragraph(
                f"Ordering-only traces (no timestamps, left out of the charts): {names}{tail}."
            )
        )
    return blocks


def command(text: str | None) -> list[Block]:
    return [
        Heading(2, "Command"),
        Paragraph("This report was made with:"),
        Code(text or "acp_trace.write_report(...)  # the library API"),
    ]


REPLAY_COLUMNS = ["gap ms", "gap from", "response ms", "outcome", "agent", "version", "session",
                  "parent", "method", "request id", "history updates", "trace"]  # fmt: skip


def replay_rows(ctx: Context) -> pl.DataFrame:
    """Every replay with its gap and source, the slowest response first (no response last)."""
    a = ctx.a
    joined = with_gap(a.replays, untimed_traces(a.timeline))
    return joined.sort("response_ms", descending=True, nulls_last=True, maintain_order=True)


def replays(ctx: Context) -> list[Block]:
    """The per-replay table, last: the slowest rows, and how many were left out."""
    rows_df = replay_rows(ctx)
    blocks: list[Block] = [Heading(2, "Every replay, slowest first")]
    if not rows_df.height:
        return [*blocks, Paragraph("No replaying session/resume or session/load in these traces.")]
    shown, more = capped(ctx, rows_df, ctx.limits.replays, "replay rows")
    rows = [
        [r["gap_ms"], SOURCE_NAMES.get(r["source"] or NO_GAP, "-"), r["response_ms"],
         r["outcome"], r["agent"], r["agent_version"], r["session"], r["parent_session"],
         r["method"], r["request_id"], r["history_updates"], ctx.trace(r["trace"])]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    return [*blocks, ctx.table(REPLAY_COLUMNS, rows, {0, 2, 10}), *more]


def replays_csv_frame(ctx: Context) -> pl.DataFrame:
    """Every replay for replays.csv: the replays table with the gap, traces named short."""
    df = replay_rows(ctx)
    return df.with_columns(pl.col("trace").replace(ctx.names)).rename({"source": "gap_source"})


def build(ctx: Context, command_text: str | None) -> list[Block]:
    """The whole report in reading order."""
    return [
        *overview(ctx),
        *findings(ctx),
        *slowest(ctx),
        *latency(ctx),
        *inputs(ctx),
        *command(command_text),
        *replays(ctx),
    ]
