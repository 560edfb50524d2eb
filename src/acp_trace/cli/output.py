"""The commands that write files: report, plot, export. Every path is checked before the
traces are read (a wrong kind of `-o` costs no analysis) and written by `acp_trace.files`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from acp_trace.cli.app import (
    Deadline,
    FrameLimit,
    From,
    MarkerMeta,
    QuietCap,
    QuietWindow,
    Scheduler,
    Traces,
    Workers,
    analyze_paths,
    app,
    exit_if_failed,
    weight_of,
)
from acp_trace.cli.targets import binary_output, directory_output, file_output, guard, note
from acp_trace.cli.terminal import emit, step
from acp_trace.errors import AcpTraceError, OutputError, UsageError
from acp_trace.quantities import count, counted

if TYPE_CHECKING:
    from acp_trace.analysis import Analysis
    from acp_trace.render.plots import Pick


NoRedactContent = Annotated[
    bool,
    typer.Option(
        "--no-redact-content",
        help="Keep credentials found in free text (API keys, tokens, passwords); by default"
        " they are replaced, as `record` does, in traces recorded before it did.",
    ),
]


@app.command()
def report(
    traces: Traces,
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="DIR", help="The report's directory.")
    ],
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    no_redact_content: NoRedactContent = False,
    workers: Workers = 1,
) -> None:
    """Write a bug report: report.md for an issue, report.html, and the charts beside them."""

    from acp_trace.render.report.bundle import CHARTS, write_report

    directory_output(output, [*REPORT_FILES, *CHARTS], traces, "report", whole=True)
    a = analyze_paths(
        traces,
        marker_meta,
        source_format,
        workers,
        weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    from acp_trace.render.report.context import shown_command

    command = shown_command(["acp-trace", *sys.argv[1:]])
    try:
        with step("writing the report (charts, report.md, report.html)"):
            files = write_report(a, output, command=command, redact_content=not no_redact_content)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM, SIGHUP: nothing half-written
        from acp_trace.cli.terminal import warn

        warn(f"{output}: the report was not written (its unfinished folder was removed)")
        raise
    emit(
        f"wrote {files.markdown}, {files.html}, {files.csv} and {counted(len(files.charts), 'chart')}\n"
    )
    if files.failed:
        from acp_trace.cli.terminal import warn

        for name, why in files.failed.items():
            warn(
                f"{files.directory / name}: the chart could not be drawn ({why}); the report says so"
            )


REPORT_FILES = ("report.md", "report.html", "replays.csv")  # and the charts (bundle.CHARTS)
EXPORT_TABLES = ("records", "replays", "findings")  # render.export.tables, in this order
Kind = Literal["gap", "replay", "latency", "weight"]


@app.command()
def plot(
    traces: Traces,
    output: Annotated[
        str,  # not a Path: a trailing / says "a directory"
        typer.Option(
            "-o",
            "--output",
            metavar="FILE",
            help="FILE.png or FILE.svg; DIR/ writes DIR/KIND.png; - writes a PNG to stdout.",
        ),
    ],
    kind: Annotated[Kind, typer.Option("--kind", help="Which chart.")] = "gap",
    session: Annotated[
        str | None, typer.Option(metavar="ID", help="replay, weight: this session's replay.")
    ] = None,
    request: Annotated[
        str | None, typer.Option(metavar="ID", help="replay, weight: the request with this id.")
    ] = None,
    trace: Annotated[
        str | None,
        typer.Option(metavar="TRACE", help="replay, weight: in this trace (path or name)."),
    ] = None,
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    workers: Workers = 1,
) -> None:
    """Draw a chart: the replay gap distribution, one replay's timeline or weight, or latency."""
    from acp_trace.files import output_dir, wants_directory
    from acp_trace.render import plots

    if kind not in plots.PICKED and any(v is not None for v in (session, request, trace)):
        raise UsageError(
            "--session, --request and --trace choose a replay: use --kind replay or weight, "
            f"not {kind}"
        )
    target = chart_target(output, kind)
    guard([target], traces)
    from acp_trace.owned import check_file

    check_file(target, "plot", plots.made_by("plot"))  # only a chart plot drew
    a = analyze_paths(
        traces,
        marker_meta,
        source_format,
        workers,
        weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    pick = plots.Pick(session=session, request=request, trace=trace)
    require_drawable(a, kind, pick)
    try:
        figure = plots.figure(a, kind, session=session, request=request, trace=trace)
        if wants_directory(output):  # made only now: a command that fails leaves nothing behind
            output_dir(output)
        path = plots.save(figure, target)
    except AcpTraceError:
        raise
    except Exception as exc:  # matplotlib refusing what a trace made of a chart
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise OutputError(
            f"{target}: the {kind} chart could not be drawn ({type(exc).__name__}: {first})"
        ) from exc
    note(f"wrote {path}\n", output)


def chart_target(output: str, kind: str) -> Path:
    """The chart's file: `output`, or DIR/KIND.png when `output` is a directory (or ends in
    `/`); checked (suffix, kind of path, its directory) before anything is read. A missing
    DIR is made once the chart is drawn. A stream (`-`, a FIFO) gets a PNG, never onto a
    terminal."""
    from acp_trace.files import check_directory_target, check_file_target, wants_directory
    from acp_trace.render.plots import chart_format

    if wants_directory(output):
        check_directory_target(output)
        return Path(output) / f"{kind}.png"
    if chart_format(output) == "png":
        binary_output(output, "a PNG")
    check_file_target(output)
    return Path(output)


def require_drawable(a: Analysis, kind: str, pick: Pick) -> None:
    """UsageError when the chart would be empty for want of input: no trace has timestamps.
    (A replay selector that matches nothing is refused by the picker, with the choices.)"""
    from acp_trace.analysis.timeline import untimed_traces

    untimed = set(untimed_traces(a.timeline))
    traces = a.timeline["trace"].unique(maintain_order=True).to_list()
    if traces and all(t in untimed for t in traces):
        names = ", ".join(traces[:3]) + (", ..." if len(traces) > 3 else "")
        raise UsageError(
            f"{names}: no timestamps (ordering-only), so no chart; "
            "replays, check and timeline still apply"
        )
    # A selector that matches nothing is the replay picker's to say (choose_window).


@app.command()
def export(
    traces: Traces,
    fmt: Annotated[
        Literal["parquet", "csv", "perfetto", "otlp"],
        typer.Option("--format", "-f", help="Format."),
    ],
    output: Annotated[
        str | None,  # not a Path: a trailing / says "a directory"
        typer.Option(
            "-o",
            "--output",
            metavar="PATH",
            help="parquet, csv: a directory (three tables); perfetto, otlp: FILE.json, - for "
            "stdout, or DIR/ for DIR/trace.json (DIR/spans.json).",
        ),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            metavar="DIR",
            help="parquet: append to this hive-partitioned dataset instead of writing -o "
            "(docs/dataset.md); traces it already holds are not written again.",
        ),
    ] = None,
    scheduler: Scheduler = None,
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
    source_format: From = None,
    no_redact_content: NoRedactContent = False,
    workers: Workers = 1,
    spreadsheet: Annotated[
        bool,
        typer.Option(
            "--spreadsheet",
            help="csv: a leading ' on cells a spreadsheet would run as formulas (=, +, -, @); "
            "without it every cell is exact, as in parquet.",
        ),
    ] = False,
) -> None:
    """Export records, replays and findings (Parquet, CSV, a growing Parquet dataset), a
    Perfetto trace or OpenTelemetry spans (OTLP/JSON)."""
    from acp_trace.render.export import write_export

    if dataset is not None:
        if fmt != "parquet" or output is not None:
            raise UsageError("--dataset DIR goes with --format parquet and without -o")
        directory_output(dataset, [], traces, "export")  # holds no input
        append_dataset(traces, dataset, scheduler, marker_meta, source_format)
        return
    if output is None:
        raise UsageError(f"--format {fmt} needs -o PATH (or, for parquet, --dataset DIR)")
    if scheduler is not None:
        raise UsageError("--scheduler goes with --dataset (the workers write the dataset)")
    export_target(fmt, output, traces)
    a = analyze_paths(
        traces,
        marker_meta,
        source_format,
        workers,
        weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    written = write_export(
        a, fmt, output, redact_content=not no_redact_content, spreadsheet=spreadsheet
    )
    note(f"wrote {', '.join(str(p) for p in written)}\n", output)
    if fmt == "otlp":
        from acp_trace.cli.terminal import warn
        from acp_trace.render.otlp import otlp_document

        for trace in otlp_document(a)[1]:
            warn(
                f"left out {trace}: no start time, no timestamps, or a time OTLP cannot hold "
                "(before 1970 or from 2554 on), so no span can be placed"
            )


def export_target(fmt: str, output: str, traces: list[str]) -> None:
    """Check `export -o` before anything is read: a directory for the tables of parquet and
    csv (a file name is refused with the reason), a file, a stream or DIR/ for the JSON of
    perfetto and otlp; none of them one of the inputs."""
    from acp_trace.files import descriptor, wants_directory
    from acp_trace.render.export import OTLP_NAME, PERFETTO_NAME, made_by_export

    if fmt in ("parquet", "csv"):
        names = [f"{table}.{fmt}" for table in EXPORT_TABLES]
        named_file = Path(output).suffix and not os.path.lexists(output)
        if not wants_directory(output) and (descriptor(output) is not None or named_file):
            raise UsageError(
                f"-o {output}: --format {fmt} writes three tables ({', '.join(names)}), "
                "so it needs a directory, e.g. -o out/"
            )
        directory_output(output, names, traces, "export")
    elif wants_directory(output):
        directory_output(output, [OTLP_NAME if fmt == "otlp" else PERFETTO_NAME], traces, "export")
    else:
        file_output(output, traces, "export", made_by_export)


def append_dataset(
    traces: list[str],
    dataset: str,
    scheduler: str | None,
    marker_meta: str | None,
    source_format: str | None,
) -> None:
    """`export --format parquet --dataset DIR`: here in one process, or by the workers of a
    Dask cluster (each appends its own partition)."""
    from acp_trace.cli.terminal import warn, warn_fleet
    from acp_trace.fleet import run

    result = run(
        traces,
        scheduler=scheduler,
        workers=None if scheduler else 1,
        partitions=None if scheduler else 1,
        marker_meta=marker_meta,
        fmt=source_format,
        dataset=dataset,
    )
    warn_fleet(result)
    for trace, problem in result.unwritten.rows():
        warn(f"not written to {dataset}: {trace}: {problem}")
    emit(dataset_counts(dataset, result.written))
    if result.unwritten.height:
        missing = result.unwritten.height + result.failed.height
        raise OutputError(
            f"{dataset}: {missing} trace(s) not written (named above); the others are in the "
            "dataset once: run the export again when the problem is fixed"
        )
    exit_if_failed(result)


def dataset_counts(dataset: str, written: dict[str, int]) -> str:
    """The line after `export --dataset`: what was appended, counts with separators."""
    w = {key: count(written.get(key, 0)) for key in ("traces", "known", *DATASET_TABLES)}
    tables = ", ".join(f"{w[key]} {key}" for key in DATASET_TABLES)
    return f"{dataset}: {w['traces']} new traces ({w['known']} already in the dataset): {tables}\n"


DATASET_TABLES = ("records", "replays", "findings", "turns")


@app.command()
def compact(
    dataset: Annotated[
        str,
        typer.Argument(metavar="DIR", help="A dataset folder written by export --dataset."),
    ],
) -> None:
    """Merge a Parquet dataset's one-file-per-trace partitions into one file each
    (docs/dataset.md): fewer files to read, the same rows, safe to kill at any moment."""
    from acp_trace.render.dataset_compact import compact as compact_dataset

    done = compact_dataset(dataset)
    emit(
        f"{dataset}: {count(done.partitions)} partitions compacted, {count(done.files_before)} "
        f"files before, {count(done.files_after)} after ({count(done.removed)} leftovers of "
        "interrupted runs removed)\n"
    )
