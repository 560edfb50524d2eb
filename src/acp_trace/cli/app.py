"""The typer app every command module registers on, the options they share, and the entry
point that turns every error into one line and exit code 2. Only `acp_trace.cli` imports
typer. What goes to the terminal goes through `acp_trace.cli.terminal`."""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from acp_trace import __version__
from acp_trace.errors import AcpTraceError

if TYPE_CHECKING:  # the heavy modules load only when a command needs them
    from acp_trace.analysis import Analysis
    from acp_trace.fleet import FleetResult

app = typer.Typer(
    name="acp-trace",
    help="Record and analyze Agent Client Protocol (ACP) traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# `--help` lists the commands in these groups, in the order a user meets them.
HELP_PANELS = {
    "Record and replay": ("record", "mock"),
    "Analyze traces": ("summary", "replays", "check", "timeline", "latency", "rules"),
    "Compare runs": ("diff",),
    "Write files": ("report", "plot", "export"),
    "Convert other captures": ("import",),
    "Try it": ("demo", "demo-agent", "demo-client"),
}

_DEBUG = {"on": False}


Traces = Annotated[
    list[str], typer.Argument(metavar="TRACE", help="Trace files, directories or globs.")
]


Format = Annotated[
    Literal["table", "json", "csv"], typer.Option("--format", "-f", help="Output format.")
]


MarkerMeta = Annotated[
    str | None,
    typer.Option(
        "--marker-meta",
        metavar="KEY",
        help="A `_meta` key that marks the end of a v1 load's replay.",
    ),
]

# The input formats (acp_trace.trace.importers.FORMATS; a test keeps the two equal). Listed
# here so that `record` does not import the importers to build its options.
SourceFormat = Literal["acp-trace", "jsonrpc", "zed", "conductor", "inspector", "thinkwell", "acpx"]
From = Annotated[
    SourceFormat | None,
    typer.Option(
        "--from",
        metavar="FORMAT",
        help="Input format: acp-trace, jsonrpc, zed, conductor or inspector "
        "(default: detected from the content).",
    ),
]


Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        min=1,
        help="Processes that read the traces (the result is the same; see docs/performance.md).",
    ),
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


def analyze_paths(
    traces: list[str],
    marker_meta: str | None = None,
    fmt: str | None = None,
    workers: int | None = 1,
) -> Analysis:
    """Read traces (with a progress bar on a terminal), warn about each file skipped, and
    return their Analysis: the one every command builds its output from."""
    from acp_trace.analysis import analyze
    from acp_trace.cli.terminal import progress_bar, warn_skipped

    with progress_bar("reading") as progress:
        a = analyze(traces, marker_meta=marker_meta, fmt=fmt, progress=progress, workers=workers)
    warn_skipped(a.records)
    return a


Scheduler = Annotated[
    str | None,
    typer.Option(
        metavar="ADDRESS",
        help="Analyze on this Dask scheduler (tcp://HOST:PORT), partition by partition; needs "
        "pip install 'acp-trace[fleet]'. The output is the same as a local run's.",
    ),
]


def analyze_tables(
    traces: list[str],
    marker_meta: str | None = None,
    fmt: str | None = None,
    workers: int | None = 1,
    scheduler: str | None = None,
    *,
    schema: bool = True,
) -> Analysis | FleetResult:
    """The Analysis, or with `scheduler` a fleet run's tables (the same rows, from Dask)."""
    if scheduler is None:
        return analyze_paths(traces, marker_meta, fmt, workers)
    from acp_trace.cli.terminal import warn
    from acp_trace.fleet import run

    result = run(traces, scheduler=scheduler, marker_meta=marker_meta, fmt=fmt, schema=schema)
    for trace, problem in result.skipped.rows():
        warn(f"skipped {trace}: {problem}")
    for trace, problem in result.failed.rows():
        warn(f"could not analyze {trace}: {problem}")
    return result


def exit_if_failed(tables: Analysis | FleetResult) -> None:
    """Exit 2 after the output when a fleet run could not analyze some files."""
    failed = getattr(tables, "failed", None)
    if failed is not None and failed.height:
        raise typer.Exit(2)


def command() -> Any:
    """The click command of the app, commands grouped for `--help` (HELP_PANELS) and flags
    shown without a type."""
    arrange_commands()
    root = typer.main.get_command(app)
    for cmd in [root, *getattr(root, "commands", {}).values()]:
        help_option = cmd.get_help_option(typer.Context(cmd))
        for param in [*cmd.params, *([help_option] if help_option else [])]:
            if getattr(param, "is_flag", False):
                param.metavar = ""  # typer would show `<bool>`
    return root


def arrange_commands() -> None:
    """Put the registered commands in HELP_PANELS order, each with its panel."""
    order = [name for names in HELP_PANELS.values() for name in names]
    panel = {name: title for title, names in HELP_PANELS.items() for name in names}

    def name_of(info: Any) -> str:
        return str(info.name or info.callback.__name__.replace("_", "-"))

    app.registered_commands.sort(key=lambda info: order.index(name_of(info)))
    for info in app.registered_commands:
        info.rich_help_panel = panel[name_of(info)]


def main() -> None:
    """Entry point: run the app; usage errors and acp-trace errors become one line
    `acp-trace: ...` on stderr and exit code 2 (a traceback too with --debug)."""
    from acp_trace.cli.terminal import usage_message

    try:
        code = command().main(args=sys.argv[1:], prog_name="acp-trace", standalone_mode=False)
    except typer.Abort:
        code = 130
    except AcpTraceError as exc:
        code = _fail(str(exc))
    except Exception as exc:
        message = usage_message(exc)
        if message is None:
            raise
        code = _fail(message, getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int = 2) -> int:
    from acp_trace.render.escape import terminal

    if _DEBUG["on"]:
        traceback.print_exc()
    if message:
        sys.stderr.write(f"acp-trace: {terminal(message)}\n")
    return code
