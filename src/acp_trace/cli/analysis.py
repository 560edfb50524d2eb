"""The analysis commands: summary, replays, check, timeline, latency and the rule catalogue.
Each one: options, one Analysis, one rendering."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from acp_trace.cli.app import (
    Deadline,
    Format,
    FrameLimit,
    From,
    MarkerMeta,
    QuietCap,
    QuietWindow,
    Scheduler,
    Traces,
    Workers,
    analyze_paths,
    analyze_tables,
    app,
    exit_if_failed,
    weight_of,
)
from acp_trace.cli.terminal import Kind, colour, emit, emit_table, emit_wrapped, width, wrapped

if TYPE_CHECKING:
    import polars as pl

Spreadsheet = Annotated[
    bool,
    typer.Option(
        "--spreadsheet",
        help="csv: a leading ' on cells a spreadsheet would run as formulas (=, +, -, @); "
        "without it every cell is exact, as in json and parquet.",
    ),
]


TextOrJson = Annotated[
    Literal["text", "json"], typer.Option("--format", "-f", help="Output format.")
]


@app.command()
def summary(
    traces: Traces, fmt: TextOrJson = "text", source_format: From = None, workers: Workers = 1
) -> None:
    """Per trace: agent, protocol, sessions, counts, duration, what went wrong; files skipped."""
    from acp_trace.analysis.summary import summarize
    from acp_trace.render.report import format_summary, frames
    from acp_trace.trace.reader import skipped_inputs

    a = analyze_paths(traces, None, source_format, workers)
    table, skipped = summarize(a.records), skipped_inputs(a.records)
    if fmt == "json":
        emit(frames({"traces": table, "skipped": skipped}, "json"), "json")
    else:
        emit_wrapped(format_summary(table, skipped))


@app.command()
def replays(
    traces: Traces,
    fmt: Format = "table",
    wide: Annotated[
        bool, typer.Option("--wide", help="table: every column, however wide.")
    ] = False,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            metavar="NAME,...",
            help="table: these columns (names as in --format csv, and gap_ms).",
        ),
    ] = None,
    spreadsheet: Spreadsheet = False,
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    workers: Workers = 1,
    scheduler: Scheduler = None,
) -> None:
    """One row per replaying request and session: outcome, the gap, timings (ms) and counts.

    The table fits the terminal, slowest response first; json and csv hold every column.
    """
    from acp_trace.render.report import frame
    from acp_trace.render.report.tables import replays_data, replays_table

    chosen = replay_columns_asked(columns)  # before the traces are read
    csv_only(spreadsheet, fmt)
    a = analyze_tables(
        traces,
        marker_meta,
        source_format,
        workers,
        scheduler,
        tables=("replays",),
        weight=weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    if fmt == "table":
        view = replays_table(a.replays, chosen, wide=wide, width=width(), untimed=a.untimed())
        emit_table(view, fit=not wide)
    else:
        data = replays_data(a.replays, a.untimed())
        emit(frame(data, fmt, spreadsheet=spreadsheet), "json" if fmt == "json" else "data")
    exit_if_failed(a)


def replay_columns_asked(columns: str | None) -> list[str] | None:
    """`--columns a,b` as a list, each checked against the columns of the replays table
    (UsageError naming them) before anything is read."""
    if not columns:
        return None
    import polars as pl

    from acp_trace.analysis.replay_fidelity import FIDELITY_SCHEMA
    from acp_trace.analysis.replay_weight import WEIGHT_SCHEMA
    from acp_trace.analysis.replays import REPLAY_SCHEMA
    from acp_trace.render.report.tables import replay_columns, replays_view

    chosen = [c.strip() for c in columns.split(",") if c.strip()]
    phases = {c: pl.String for c in GAP_PHASE_COLUMNS}
    empty = pl.DataFrame(schema=REPLAY_SCHEMA | FIDELITY_SCHEMA | WEIGHT_SCHEMA | phases)
    replay_columns(replays_view(empty), chosen)
    return chosen or None


# The columns the phase pass adds to the replays table (analysis/phases.py; a test keeps
# REPLAY_SCHEMA, FIDELITY_SCHEMA, WEIGHT_SCHEMA and these equal to the columns of an analyzed table).
GAP_PHASE_COLUMNS = ("stderr_lines_in_gap", "last_stderr_in_gap")


def check_rules_asked(rules: list[str] | None, min_severity: str, *, schema: bool) -> None:
    """Before anything is read: every `--rule` is a rule id, and none of them needs the
    schema pass that `--no-schema` turns off (it would find nothing: a silent pass in CI)."""
    from acp_trace.analysis.checks import RULES
    from acp_trace.analysis.front import check_rule_filter
    from acp_trace.errors import UsageError

    check_rule_filter(rules, min_severity)
    needing = [r for r in rules or [] if RULES[r].check.__module__.endswith(".schema_rules")]
    if needing and not schema:
        raise UsageError(
            f"--rule {needing[0]} needs the schema validation that --no-schema turns off; "
            "drop one of the two"
        )


SEVERITY_COLOURS = {"error": "\x1b[1;31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_FINDING = re.compile(r"^( +)(error|warning|info)(?= )", re.MULTILINE)


def coloured_severities(text: str) -> str:
    """check's text for a terminal: escaped like any text, then each finding's severity in
    its colour (error red, warning yellow, info cyan)."""
    from acp_trace.render.escape import terminal_lines

    def paint(m: re.Match[str]) -> str:
        return f"{m[1]}{SEVERITY_COLOURS[m[2]]}{m[2]}\x1b[0m"

    return _FINDING.sub(paint, terminal_lines(text))


def csv_only(spreadsheet: bool, fmt: str) -> None:
    """UsageError for --spreadsheet with an output that is no CSV (checked before reading)."""
    from acp_trace.errors import UsageError

    if spreadsheet and fmt != "csv":
        raise UsageError(f"--spreadsheet goes with --format csv, not --format {fmt}")


CHECK_KINDS: dict[str, Kind] = {"text": "text", "json": "json", "junit": "data"}


@app.command()
def check(
    traces: Traces,
    fmt: Annotated[
        Literal["text", "json", "junit"], typer.Option("--format", "-f", help="Output format.")
    ] = "text",
    rule: Annotated[
        list[str] | None,
        typer.Option("--rule", metavar="ID", help="Only this rule (repeatable; see rules)."),
    ] = None,
    min_severity: Annotated[
        Literal["error", "warning", "info"],
        typer.Option("--min-severity", help="Leave out findings below this severity."),
    ] = "info",
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema/--no-schema",
            help="Validate every message against the ACP JSON Schema (schema-invalid, "
            "caused-error).",
        ),
    ] = True,
    workers: Workers = 1,
    scheduler: Scheduler = None,
) -> None:
    """Evaluate every rule of the catalogue; exit 1 when there is an error finding."""
    from acp_trace.render import report as render

    check_rules_asked(rule, min_severity, schema=schema)
    a = analyze_tables(
        traces,
        marker_meta,
        source_format,
        workers,
        scheduler,
        schema=schema,
        tables=("replays", "findings", "losses"),
        weight=weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    findings = a.findings(rule, min_severity, schema=schema)
    text = render.check_output(a, findings, fmt)
    if fmt == "text" and colour():
        emit(coloured_severities(wrapped(text, width())), "styled")
    elif fmt == "text":
        emit_wrapped(text)
    else:
        emit(text, CHECK_KINDS[fmt])
    exit_if_failed(a)
    if findings.filter(findings["severity"] == "error").height:
        raise typer.Exit(1)


@app.command()
def timeline(
    traces: Traces,
    session: Annotated[
        str | None, typer.Option(metavar="ID", help="Only this session's messages.")
    ] = None,
    replays_only: Annotated[
        bool, typer.Option("--replays-only", help="Only replay windows.")
    ] = False,
    fmt: TextOrJson = "text",
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    workers: Workers = 1,
) -> None:
    """Print what happened, message by message, with replay windows and markers set off,
    and the lines longer than a client's limit and the silences past a client's deadline."""
    from acp_trace.render.report import format_timeline
    from acp_trace.render.timeline_weight import weight_marks

    a = analyze_paths(
        traces,
        marker_meta,
        source_format,
        workers,
        weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    if session is not None:
        require_session(a.timeline, session)
    marks = weight_marks(a.timeline, a.facts.windows, a.weight, a.weight_lines)
    if fmt == "json":
        from acp_trace.render.report.formats import to_json
        from acp_trace.render.timeline_json import timeline_document, timeline_rows

        rows = timeline_rows(
            a.timeline, a.facts.windows, session=session, replays_only=replays_only, marks=marks
        )
        emit(to_json(timeline_document(rows)), "json")
        return
    text = format_timeline(
        a.timeline, a.facts.windows, session=session, replays_only=replays_only, marks=marks
    )
    emit(text)


def require_session(tl: pl.DataFrame, session: str) -> None:
    """UsageError naming the sessions there are when `session` is none of them."""
    from acp_trace.cli.choices import no_match

    known = tl["session"].drop_nulls().unique(maintain_order=True).to_list()
    if session not in known:
        raise no_match("--session", session, "sessions of these traces", known)


@app.command()
def latency(
    traces: Traces,
    by: Annotated[
        Literal["method", "agent", "trace"], typer.Option("--by", help="Group requests by.")
    ] = "method",
    fmt: Format = "table",
    only: Annotated[
        Literal["requests", "prompt_turns"] | None,
        typer.Option(
            "--table",
            help="Only this table (csv holds one: requests unless prompt_turns is chosen).",
        ),
    ] = None,
    spreadsheet: Spreadsheet = False,
    source_format: From = None,
    workers: Workers = 1,
    scheduler: Scheduler = None,
) -> None:
    """Request-to-response latency per method (agents apart), and prompt-turn phases."""
    from acp_trace.analysis.latency import turn_phases
    from acp_trace.render import report as render
    from acp_trace.render.report.sections_text import latency_sections, narrow_latency, sectioned
    from acp_trace.render.report.tables import fits, left_out_note, readable_agents

    csv_only(spreadsheet, fmt)
    a = analyze_tables(
        traces, None, source_format, workers, scheduler, tables=("turns", "requests")
    )
    requests = a.latency(by)
    phases = turn_phases(a.turns, by)
    tables = {"requests": requests, "prompt_turns": phases}
    if fmt == "csv":
        emit(render.frame(tables[only or "requests"], fmt, spreadsheet=spreadsheet), "data")
    elif fmt == "json":
        emit(render.frames({only: tables[only]} if only else tables, fmt), "json")
    else:
        fold = ("method", "agent", "trace", "phase")
        if not fits(requests.drop("method", strict=False), width()):  # a terminal too narrow
            requests, phases = readable_agents(requests), readable_agents(phases)
        shown, keys = latency_sections(requests, by)
        shown, dropped = narrow_latency(shown, keys, width())
        if only != "prompt_turns":
            emit_table(sectioned(shown, keys, fold=fold, width=width()))
        if phases.height and only != "requests":
            emit("\nprompt turns (ms from the request, phases in the order they happen):\n")
            shown, keys = latency_sections(phases, by)
            shown, more = narrow_latency(shown, keys, width())
            dropped += [c for c in more if c not in dropped]
            emit_table(sectioned(shown, keys, fold=fold, width=width()))
        for line in left_out_note(dropped, width(), "a wider terminal, or --format json|csv"):
            emit(line + "\n")
    exit_if_failed(a)


@app.command()
def rules(fmt: TextOrJson = "text") -> None:
    """List the rule catalogue: id, severity and what breaks it."""
    from acp_trace.analysis.checks import CATALOGUE  # data only: no polars to load

    if fmt == "json":
        import orjson

        keys = ("id", "severity", "side", "summary")
        listed = [{k: getattr(r, k) for k in keys} for r in CATALOGUE]
        emit(orjson.dumps(listed, option=orjson.OPT_INDENT_2).decode() + "\n", "json")
        return
    for r in CATALOGUE:
        typer.echo(f"{r.id:<30} {r.severity:<8} {r.side:<7} {r.summary}")
