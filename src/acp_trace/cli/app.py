"""The typer app every command module registers on, the options they share, and the entry
point that turns acp-trace errors into one line and exit code 2. Only `acp_trace.cli` imports
typer."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from acp_trace import __version__
from acp_trace.errors import AcpTraceError

if TYPE_CHECKING:  # the heavy modules load only when a command needs them
    import polars as pl

    from acp_trace.analysis import Analysis
    from acp_trace.fleet import FleetResult

app = typer.Typer(
    name="acp-trace",
    help="Record and analyze Agent Client Protocol (ACP) traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


_DEBUG = {"on": False}


Traces = Annotated[list[str], typer.Argument(help="Trace files, directories or globs.")]


Format = Annotated[str, typer.Option("--format", "-f", help="table, json or csv.")]


MarkerMeta = Annotated[
    str | None,
    typer.Option("--marker-meta", help="A `_meta` key that marks the end of a v1 load's replay."),
]


From = Annotated[
    str | None, typer.Option("--from", help="Input format (default: detected from the content).")
]


@app.callback(invoke_without_command=True)
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    _DEBUG["on"] = debug
    if version:
        typer.echo(f"acp-trace {__version__}")
        raise typer.Exit(0)


def progress_bar(label: str) -> Callable[[int, int], None] | None:
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


def analyze_paths(
    traces: list[str], marker_meta: str | None = None, fmt: str | None = None
) -> Analysis:
    from acp_trace.analysis import analyze

    a = analyze(traces, marker_meta=marker_meta, fmt=fmt, progress=progress_bar("reading"))
    warn_skipped(a.records)
    return a


Scheduler = Annotated[
    str | None,
    typer.Option(
        help="Run the analysis on this Dask scheduler (tcp://HOST:PORT), partition by partition "
        "(needs pip install 'acp-trace[fleet]').",
        rich_help_panel="Fleet",
    ),
]


def analyze_tables(
    traces: list[str],
    marker_meta: str | None = None,
    fmt: str | None = None,
    scheduler: str | None = None,
) -> Analysis | FleetResult:
    """The Analysis, or with `scheduler` the fleet run's tables (the same rows, from Dask)."""
    if scheduler is None:
        return analyze_paths(traces, marker_meta, fmt)
    from acp_trace.fleet import run

    result = run(traces, scheduler=scheduler, marker_meta=marker_meta, fmt=fmt)
    for trace, problem in result.skipped.rows():
        sys.stderr.write(f"acp-trace: skipped {trace}: {problem}\n")
    for trace, problem in result.failed.rows():
        sys.stderr.write(f"acp-trace: could not analyze {trace}: {problem}\n")
    return result


def exit_if_failed(tables: Analysis | FleetResult) -> None:
    """Exit 2 after the output when a fleet run could not analyze some files."""
    failed = getattr(tables, "failed", None)
    if failed is not None and failed.height:
        raise typer.Exit(2)


def warn_skipped(records: pl.DataFrame) -> None:
    """One line on stderr per file passed over while reading (the rest was analyzed)."""
    from acp_trace.trace.reader import skipped_inputs

    for trace, problem in skipped_inputs(records).rows():
        sys.stderr.write(f"acp-trace: skipped {trace}: {problem}\n")


def emit_frame(df: pl.DataFrame, fmt: str, table: str | None = None) -> None:
    from acp_trace.render import report as render

    typer.echo(render.frame(df, fmt, table), nl=False)


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
