"""The command line: parse options, call one library function, render. Only this module imports typer."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from acp_trace import __version__
from acp_trace.errors import AcpTraceError

if TYPE_CHECKING:  # the heavy modules load only when a command needs them
    import polars as pl

    from acp_trace.analysis import Analysis

app = typer.Typer(
    name="acp-trace",
    help="Record and analyze Agent Client Protocol (ACP) traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_DEBUG = {"on": False}

Traces = Annotated[list[str], typer.Argument(help="Trace files, directories or globs.")]


@app.callback(invoke_without_command=True)
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    _DEBUG["on"] = debug
    if version:
        typer.echo(f"acp-trace {__version__}")
        raise typer.Exit(0)


def _progress(label: str) -> Callable[[int, int], None] | None:
    """A progress callback for long runs, drawn on stderr only when it is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        if total < 20:
            return
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r{label}: {done}/{total} traces{end}")
        sys.stderr.flush()

    return show


@app.command()
def summary(traces: Traces, source_format: From = None) -> None:
    """Per trace: agent, protocol, sessions, message counts, duration, stderr and malformed lines."""
    from acp_trace.report import format_summary
    from acp_trace.summary import summarize
    from acp_trace.trace_io import read_trace

    records = read_trace(traces, fmt=source_format, progress=_progress("reading"))
    typer.echo(format_summary(summarize(records)), nl=False)


# ---------------------------------------------------------------- demo agent and client

Faults = Annotated[
    list[str] | None,
    typer.Option("--fault", help="Break one rule on purpose (repeatable); see --list-faults."),
]


@app.command("demo-agent")
def demo_agent(
    turns: Annotated[int, typer.Option(help="Turns of fabricated history per session.")] = 3,
    pace: Annotated[float, typer.Option(help="Seconds between two replayed updates.")] = 0.0,
    gap: Annotated[
        str,
        typer.Option(
            help="Marker to response delay: SECONDS, uniform:A,B, lognormal:MU,SIGMA, "
            "exponential:MEAN."
        ),
    ] = "0",
    seed: Annotated[int, typer.Option(help="Seed of the random delays.")] = 0,
    children: Annotated[int, typer.Option(help="Child sessions per session (v2 replay).")] = 0,
    session: Annotated[
        list[str] | None, typer.Option(help="A session id the agent knows (repeatable).")
    ] = None,
    fault: Faults = None,
    list_faults: Annotated[bool, typer.Option("--list-faults", help="List faults, exit.")] = False,
) -> None:
    """Run the reference ACP agent (v1 and v2) on stdin/stdout."""
    from acp_trace import demo_agent as agent
    from acp_trace.errors import UsageError

    if list_faults:
        typer.echo("".join(f"{name}: {text}\n" for name, text in agent.FAULTS.items()), nl=False)
        return
    try:
        opts = agent.AgentOptions(
            turns=turns,
            pace=pace,
            gap=gap,
            seed=seed,
            children=children,
            sessions=tuple(session or ("sess_demo",)),
            faults=frozenset(fault or ()),
        )
    except ValueError as exc:
        raise UsageError(f"demo-agent: {exc}") from exc
    raise typer.Exit(agent.run_agent(opts))


@app.command("demo-client")
def demo_client(
    command: Annotated[list[str], typer.Argument(help="The agent command, after `--`.")],
    protocol: Annotated[int, typer.Option(help="ACP version to ask for (1 or 2).")] = 2,
    resumes: Annotated[int, typer.Option(help="Replaying resumes (v2) or loads (v1).")] = 1,
    session: Annotated[str | None, typer.Option(help="Resume this session (else new).")] = None,
    cwd: Annotated[str | None, typer.Option(help="cwd sent to the agent.")] = None,
    prompt: Annotated[str | None, typer.Option(help="Send this prompt first.")] = None,
    cursor: Annotated[str, typer.Option(help="v2 replayFrom type; `none` omits it.")] = "start",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each response.")] = 60.0,
    grace: Annotated[float, typer.Option(help="Seconds between closing stdin and SIGTERM.")] = 5.0,
    save: Annotated[Path | None, typer.Option(help="Save every byte received.")] = None,
    save_sent: Annotated[Path | None, typer.Option(help="Save every byte sent.")] = None,
    summary: Annotated[bool, typer.Option(help="Print one line per request.")] = False,
) -> None:
    """Drive an agent: initialize, session/new (or --session), prompt, N resumes or loads."""
    import os

    from acp_trace import demo_client as client

    opts = client.ClientOptions(
        command=tuple(command),
        protocol=protocol,
        resumes=resumes,
        session=session,
        cwd=cwd or os.getcwd(),
        prompt=prompt,
        cursor=cursor,
        timeout=timeout,
        grace=grace,
        save=save,
        save_sent=save_sent,
    )
    result = client.run_client(opts)
    if summary:
        typer.echo(client.format_result(result), nl=False)
    if not result.finished:
        sys.stderr.write(f"acp-trace: demo-client: {result.problem}\n")
        raise typer.Exit(1)


@app.command()
def demo(
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Keep the traces and report here.")
    ] = None,
) -> None:
    """Record the demo client and agent through the tap, then summarize and write the report."""
    import tempfile

    from acp_trace import demo as demo_mod

    folder = out or Path(tempfile.mkdtemp(prefix="acp-trace-demo-"))  # kept: it has the report
    traces = demo_mod.run_demo(folder)
    typer.echo(f"recorded {len(traces)} traces in {folder}")
    typer.echo(demo_mod.build_outputs(traces, folder), nl=False)


Format = Annotated[str, typer.Option("--format", "-f", help="table, json or csv.")]
MarkerMeta = Annotated[
    str | None,
    typer.Option("--marker-meta", help="A `_meta` key that marks the end of a v1 load's replay."),
]
From = Annotated[
    str | None, typer.Option("--from", help="Input format (default: detected from the content).")
]


def _analyze(traces: list[str], marker_meta: str | None = None, fmt: str | None = None) -> Analysis:
    from acp_trace.analysis import analyze

    return analyze(traces, marker_meta=marker_meta, fmt=fmt, progress=_progress("reading"))


def _emit_frame(df: pl.DataFrame, fmt: str, table: str | None = None) -> None:
    from acp_trace import report as render

    typer.echo(render.frame(df, fmt, table), nl=False)


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
    from acp_trace.report import format_timeline

    a = _analyze(trace, marker_meta, source_format)
    text = format_timeline(a.timeline, a.facts.windows, session=session, replays_only=replays_only)
    typer.echo(text, nl=False)


@app.command()
def replays(
    traces: Traces,
    fmt: Format = "table",
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """One row per replaying request and session: outcome, timings (ms) and counts."""
    a = _analyze(traces, marker_meta, source_format)
    _emit_frame(a.replays, fmt, "replays")


@app.command()
def latency(
    traces: Traces,
    by: Annotated[str, typer.Option("--by", help="Group by method, agent or trace.")] = "method",
    fmt: Format = "table",
    source_format: From = None,
) -> None:
    """Request-to-response latency per method, and prompt-turn phases."""
    from acp_trace.latency import turn_phases

    a = _analyze(traces, None, source_format)
    requests = a.latency(by)
    phases = turn_phases(a.turns, by)
    if fmt == "table":
        _emit_frame(requests, fmt)
        if phases.height:
            typer.echo("\nprompt turns (request to first agent chunk, acceptance, end of turn):")
            _emit_frame(phases, fmt)
    else:
        from acp_trace import report as render

        typer.echo(render.frames({"requests": requests, "prompt_turns": phases}, fmt), nl=False)


@app.command()
def check(
    traces: Traces,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json or junit.")] = "text",
    rule: Annotated[list[str] | None, typer.Option("--rule", help="Only these rule ids.")] = None,
    min_severity: Annotated[str, typer.Option("--min-severity")] = "info",
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Evaluate every rule of the catalogue; exit 1 when there is an error finding."""
    from acp_trace import report as render

    a = _analyze(traces, marker_meta, source_format)
    findings = a.findings(rule, min_severity)
    typer.echo(render.check_output(a, findings, fmt), nl=False)
    if findings.filter(findings["severity"] == "error").height:
        raise typer.Exit(1)


@app.command()
def rules() -> None:
    """List the rule catalogue: id, severity and what breaks it."""
    from acp_trace.checks import RULES

    for r in RULES.values():
        typer.echo(f"{r.id:<30} {r.severity:<8} {r.summary}")


# ---------------------------------------------------------------- charts, reports, exports


@app.command()
def plot(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="FILE.png or FILE.svg.")],
    kind: Annotated[str, typer.Option("--kind", help="gap, replay or latency.")] = "gap",
    session: Annotated[str | None, typer.Option(help="replay: this session's replay.")] = None,
    request: Annotated[str | None, typer.Option(help="replay: the request with this id.")] = None,
    trace: Annotated[str | None, typer.Option(help="replay: in this trace (path or name).")] = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Draw a chart: the replay gap distribution, one replay's timeline, or latency."""
    from acp_trace.plots import plot as draw

    path = draw(
        traces,
        output,
        kind,
        session=session,
        request=request,
        trace=trace,
        marker_meta=marker_meta,
        fmt=source_format,
        progress=_progress("reading"),
    )
    typer.echo(f"wrote {path}")


@app.command()
def report(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="The report's directory.")],
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Write a bug report: report.md for an issue, report.html, and the charts beside them."""
    import shlex

    from acp_trace.report.bundle import report as write_report

    command = shlex.join(["acp-trace", *sys.argv[1:]])
    files = write_report(
        traces,
        output,
        command=command,
        marker_meta=marker_meta,
        fmt=source_format,
        progress=_progress("reading"),
    )
    typer.echo(f"wrote {files.markdown}, {files.html} and {len(files.charts)} charts")


@app.command()
def export(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="A directory, or FILE.json.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="parquet, csv or perfetto.")],
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Export records, replays and findings (Parquet, CSV) or a Perfetto trace (JSON)."""
    from acp_trace.export import export as write_export

    written = write_export(
        traces,
        fmt,
        output,
        marker_meta=marker_meta,
        source_format=source_format,
        progress=_progress("reading"),
    )
    typer.echo(f"wrote {', '.join(str(p) for p in written)}")


@app.command(context_settings={"allow_interspersed_args": False})
def record(
    command: Annotated[
        list[str],
        typer.Argument(help="The agent and its arguments, after `--`.", metavar="AGENT..."),
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the trace to this file.")
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Write a new trace named TIMESTAMP-AGENT.jsonl into this directory "
            "(default: $ACP_TRACE_DIR, else $XDG_STATE_HOME/acp-trace/traces).",
        ),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Record secrets (MCP env/headers, credentials).")
    ] = False,
    max_record_bytes: Annotated[
        int | None,
        typer.Option(
            min=0, help="Cut the recorded copy of longer lines (forwarding is never cut)."
        ),
    ] = None,
    grace: Annotated[
        float,
        typer.Option(
            min=0.0, help="Seconds the agent may outlive the client's stdin (then TERM, KILL)."
        ),
    ] = 3.0,
    queue_bytes: Annotated[
        int,
        typer.Option(
            min=1, help="Bytes of lines waiting for a slow disk before records are dropped."
        ),
    ] = 256 << 20,
) -> None:
    """Run an agent behind a tap that forwards every byte and records a trace: -- AGENT [ARGS...]."""
    from acp_trace.tap import RecordOptions
    from acp_trace.tap import record as run_recorder

    def warn(message: str) -> None:
        sys.stderr.write(f"acp-trace: {message}\n")
        sys.stderr.flush()

    options = RecordOptions(
        command=command,
        output=output,
        directory=directory,
        redact=not no_redact,
        max_record_bytes=max_record_bytes,
        grace=grace,
        queue_bytes=queue_bytes,
    )
    result = run_recorder(options, warn=warn)
    if result.dropped and result.write_error is None:
        warn(f"{result.trace}: {result.dropped} records were dropped (the disk was too slow)")
    raise typer.Exit(result.exit_code)


@app.command("import")
def import_(
    sources: Annotated[list[str], typer.Argument(help="Capture files, directories or globs.")],
    output: Annotated[
        str,
        typer.Option(
            "-o",
            "--output",
            help="Output file; a directory (existing, or ending in /) for several.",
        ),
    ],
    source_format: From = None,
) -> None:
    """Convert other ACP captures (bare JSON-RPC, Zed log, conductor, inspector) to trace v1."""
    from acp_trace import importers
    from acp_trace.errors import UsageError

    traces = importers.import_files(sources, source_format)
    if not traces:
        raise UsageError(f"{' '.join(sources)}: no capture file found")
    targets = importers.output_paths([name for name, _ in traces], output)
    inputs = {Path(name.partition("#")[0]).resolve() for name, _ in traces}
    for (name, lines), target in zip(traces, targets, strict=True):
        if target.resolve() in inputs:
            raise UsageError(f"-o {target}: would overwrite the source {name}")
        importers.write_trace(target, lines)
        facts = importers.header_summary(lines)
        notes = "".join(
            f", {facts[key]} {key}" for key in ("unconverted", "ambiguous") if facts[key]
        )
        typer.echo(f"{name} -> {target}: {facts['records']} records, {facts['timing']}{notes}")


def main() -> None:
    """Entry point: run the app and turn acp-trace errors into `acp-trace: ...` and exit 2.

    Typer's standalone mode already maps usage errors to exit 2 and `typer.Exit` to its code.
    """
    try:
        app()
    except AcpTraceError as exc:
        if _DEBUG["on"]:
            traceback.print_exc()
        sys.stderr.write(f"acp-trace: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
