"""The analysis commands: summary, replays, check, timeline, latency and the rule catalogue."""

from __future__ import annotations

from typing import Annotated

import typer

from acp_trace.cli.app import (
    Format,
    From,
    MarkerMeta,
    Scheduler,
    Traces,
    analyze_paths,
    analyze_tables,
    app,
    emit_frame,
    exit_if_failed,
    progress_bar,
    warn_skipped,
)


@app.command()
def summary(traces: Traces, source_format: From = None) -> None:
    """Per trace: agent, protocol, sessions, message counts, duration, stderr and malformed lines."""
    from acp_trace.analysis.summary import summarize
    from acp_trace.render.report import format_summary
    from acp_trace.trace.reader import read_trace

    records = read_trace(traces, fmt=source_format, progress=progress_bar("reading"))
    warn_skipped(records)
    typer.echo(format_summary(summarize(records)), nl=False)


@app.command()
def replays(
    traces: Traces,
    fmt: Format = "table",
    marker_meta: MarkerMeta = None,
    source_format: From = None,
    scheduler: Scheduler = None,
) -> None:
    """One row per replaying request and session: outcome, timings (ms) and counts."""
    a = analyze_tables(traces, marker_meta, source_format, scheduler)
    emit_frame(a.replays, fmt, "replays")
    exit_if_failed(a)


@app.command()
def check(
    traces: Traces,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json or junit.")] = "text",
    rule: Annotated[list[str] | None, typer.Option("--rule", help="Only these rule ids.")] = None,
    min_severity: Annotated[str, typer.Option("--min-severity")] = "info",
    marker_meta: MarkerMeta = None,
    source_format: From = None,
    scheduler: Scheduler = None,
) -> None:
    """Evaluate every rule of the catalogue; exit 1 when there is an error finding."""
    from acp_trace.render import report as render

    a = analyze_tables(traces, marker_meta, source_format, scheduler)
    findings = a.findings(rule, min_severity)
    typer.echo(render.check_output(a, findings, fmt), nl=False)
    exit_if_failed(a)
    if findings.filter(findings["severity"] == "error").height:
        raise typer.Exit(1)


@app.command()
def timeline(
    trace: Annotated[list[str], typer.Argument(help="Trace file(s).")],
    session: Annotated[str | None, typer.Option(help="Only this session's messages.")] = None,
    replays_only: Annotated[
        bool, typer.Option("--replays-only", help="Only replay windows.")
    ] = False,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Print what happened, message by message, with replay windows and markers set off."""
    from acp_trace.render.report import format_timeline

    a = analyze_paths(trace, marker_meta, source_format)
    text = format_timeline(a.timeline, a.facts.windows, session=session, replays_only=replays_only)
    typer.echo(text, nl=False)


@app.command()
def latency(
    traces: Traces,
    by: Annotated[str, typer.Option("--by", help="Group by method, agent or trace.")] = "method",
    fmt: Format = "table",
    source_format: From = None,
    scheduler: Scheduler = None,
) -> None:
    """Request-to-response latency per method, and prompt-turn phases."""
    from acp_trace.analysis.latency import turn_phases

    a = analyze_tables(traces, None, source_format, scheduler)
    requests = a.latency(by)
    phases = turn_phases(a.turns, by)
    if fmt == "table":
        emit_frame(requests, fmt)
        if phases.height:
            typer.echo("\nprompt turns (request to first agent chunk, acceptance, end of turn):")
            emit_frame(phases, fmt)
    else:
        from acp_trace.render import report as render

        typer.echo(render.frames({"requests": requests, "prompt_turns": phases}, fmt), nl=False)
    exit_if_failed(a)


@app.command()
def rules() -> None:
    """List the rule catalogue: id, severity and what breaks it."""
    from acp_trace.analysis.checks import RULES

    for r in RULES.values():
        typer.echo(f"{r.id:<30} {r.severity:<8} {r.summary}")
