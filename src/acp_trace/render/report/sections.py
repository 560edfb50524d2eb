"""The sections of the bug report, as document blocks, in the order a reader of the issue
needs them: the key facts (`facts`), the findings grouped by rule, the slowest replay, what a
client would have suffered (`weight_section`), latency, files skipped, the command, and last
the per-replay table (capped in Markdown, whole in HTML and replays.csv).
"""

from __future__ import annotations

import polars as pl

from acp_trace.analysis.latency import turn_phases
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.quantities import count, counted, duration
from acp_trace.render.plots._common import plural
from acp_trace.render.plots.gap import with_gap
from acp_trace.render.plots.latency import PHASES
from acp_trace.render.report.context import Context, capped
from acp_trace.render.report.document import Block, Bullets, Code, Heading, Image, Paragraph
from acp_trace.render.report.facts import overview, source_name
from acp_trace.render.report.fidelity_section import fidelity
from acp_trace.render.report.text import loss_lines
from acp_trace.render.report.weight_section import suffered

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


# ---------------------------------------------------------------- findings


def findings(ctx: Context) -> list[Block]:
    """Counts per severity, then per rule (errors first): how many, in how many traces, and
    the first one with its message. HTML adds every finding."""
    found = ctx.a.findings()
    counts = {s: found.filter(pl.col("severity") == s).height for s in SEVERITY_ORDER}
    text = (
        ", ".join(f"{count(n)} info" if s == "info" else counted(n, s) for s, n in counts.items())
        + " (acp-trace check)."
    )  # as check's text counts them: 19 errors, 4 warnings, 0 info
    blocks: list[Block] = [Heading(2, "Findings by rule"), Paragraph(text)]
    if not found.height:
        return blocks
    grouped, more = capped(ctx, grouped_findings(found), ctx.limits.findings, "rule")
    rows = [
        [r["severity"], r["rule"], r["count"], r["traces"], ctx.trace(r["trace"]), r["session"],
         r["seq"], r["message"]]
        for r in grouped.iter_rows(named=True)
    ]  # fmt: skip
    columns = ["severity", "rule", "count", "traces", "first in trace", "session", "seq", "message"]
    blocks += [ctx.table(columns, rows, {2, 3, 6}, wide=7), *more]
    if ctx.limits.full:
        every, rest = capped(ctx, found, ctx.limits.findings, "finding")
        rows = [
            [r["severity"], r["rule"], ctx.trace(r["trace"]), r["session"], r["seq"], r["message"]]
            for r in every.iter_rows(named=True)
        ]
        columns = ["severity", "rule", "trace", "session", "seq", "message"]
        blocks += [Heading(3, "Every finding"), ctx.table(columns, rows, {4}, wide=5), *rest]
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
        f"The replay with the longest response ({duration(r['response_ms'])}): {ctx.cell(r['method'])}"
        f" of session {ctx.cell(r['session'])} (request id {ctx.cell(r['request_id'])}) in "
        f"{ctx.cell(ctx.trace(r['trace']))}. "
        "Another one: acp-trace plot TRACE -o replay.png --kind replay --session ID; what it "
        "weighs: --kind weight."
    )
    return [
        Heading(2, "Slowest replay"),
        Paragraph(text),
        Image("replay.png", "Timeline of the slowest replay"),
        Image("weight.png", "What the slowest replay weighs, against the clients' limits"),
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
    shown, more = capped(ctx, requests, ctx.limits.latency, "latency row")
    rows = [
        [r["agent"], r["agent_version"], r["method"], r["count"], r["errors"], r["unanswered"],
         r["p50_ms"], r["p90_ms"], r["max_ms"]]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    total = int(requests["count"].sum())
    answered = total - int(requests["unanswered"].sum())
    blocks.append(
        Paragraph(
            f"{count(total)} {plural(total, 'request')} ({count(answered)} answered), "
            "per agent version and method:"
        )
    )
    blocks += [ctx.table(LATENCY_COLUMNS, rows, {3, 4, 5, 6, 7, 8}), *more]
    phases = turn_phases(a.turns, "agent").filter(pl.col("count") > 0)  # in time order
    if phases.height:
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
        shown, more = capped(ctx, ctx.skipped, ctx.limits.skipped, "skipped file")
        rows = [[ctx.trace(t), problem] for t, problem in shown.iter_rows()]
        blocks += [
            Heading(2, "Files skipped"),
            Paragraph(
                f"{count(ctx.skipped.height)} {plural(ctx.skipped.height, 'file')} read as no trace:"
            ),
            ctx.table(["file", "problem"], rows, set()),
            *more,
        ]
    losses = ctx.a.losses
    if losses.height:
        lacking = losses.height
        shown, more = capped(ctx, losses, ctx.limits.skipped, "lacking recording")
        blocks += [
            Heading(2, "Recordings that lack lines"),
            Paragraph(
                f"{counted(lacking, 'trace')} {'lacks' if lacking == 1 else 'lack'} part of"
                " the recording: nothing in this report, findings included, can speak of what is"
                " not there."
            ),
            Bullets(
                [
                    f"{ctx.trace(r['trace'])}: {'; '.join(loss_lines(r))}"
                    for r in shown.iter_rows(named=True)
                ]
            ),
            *more,
        ]
    untimed = untimed_traces(ctx.a.timeline)
    if untimed:
        names = ", ".join(ctx.cell(ctx.trace(t)) for t in untimed[: ctx.limits.skipped or None])
        left = len(untimed) - len(untimed[: ctx.limits.skipped or None])
        tail = f" and {count(left)} more" if left else ""
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
    blocks: list[Block] = [Heading(2, "Replays, slowest first")]
    if not rows_df.height:
        return [*blocks, Paragraph("No replaying session/resume or session/load in these traces.")]
    shown, more = capped(ctx, rows_df, ctx.limits.replays, "replay row")
    rows = [
        [r["gap_ms"], source_name(r["gap_source"]), r["response_ms"],
         r["outcome"], r["agent"], r["agent_version"], r["session"], r["parent_session"],
         r["method"], r["request_id"], r["history_updates"], ctx.trace(r["trace"])]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    return [*blocks, ctx.table(REPLAY_COLUMNS, rows, {0, 2, 10}), *more]


# Columns of the replays table that hold text the agent wrote (its stderr lines): a report
# names agents, sessions, timings and phases, never what a message or a log line said.
CONTENT_COLUMNS = ("last_stderr_in_gap",)


def replays_csv_frame(ctx: Context) -> pl.DataFrame:
    """Every replay for replays.csv: the replays table with the gap, traces named short,
    without the agent's own words (CONTENT_COLUMNS)."""
    df = replay_rows(ctx).with_columns(pl.col("trace").replace(ctx.names))
    df = df.drop(CONTENT_COLUMNS, strict=False)
    floats = [c for c, t in df.schema.items() if t == pl.Float64]
    # the tap stamps nanoseconds: six decimals of a millisecond, no float noise
    return df.with_columns(pl.col(floats).round(6))


def build(ctx: Context, command_text: str | None) -> list[Block]:
    """The whole report in reading order."""
    return [
        *overview(ctx),
        *findings(ctx),
        *fidelity(ctx),
        *slowest(ctx),
        *suffered(ctx),
        *latency(ctx),
        *inputs(ctx),
        *command(command_text),
        *replays(ctx),
    ]
