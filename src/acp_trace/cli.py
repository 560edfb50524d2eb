"""The command line: parse options, call one library function, render. Only this module imports typer."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from acp_trace import __version__
from acp_trace.errors import AcpTraceError

app = typer.Typer(
    name="acp-trace",
    help="Record and analyze Agent Client Protocol (ACP) traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_DEBUG = {"on": False}

Traces = Annotated[list[str], typer.Argument(help="Trace files, directories or globs.")]


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    _DEBUG["on"] = debug
    if version:
        typer.echo(f"acp-trace {__version__}")
        raise typer.Exit(0)


def _progress(label: str):  # type: ignore[no-untyped-def]
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
def summary(traces: Traces) -> None:
    """Per trace: agent, protocol, sessions, message counts, duration, stderr and malformed lines."""
    from acp_trace import report, timeline
    from acp_trace.trace_io import read_trace

    records = read_trace(traces, progress=_progress("reading"))
    typer.echo(report.format_summary(timeline.summarize(records)), nl=False)


def main() -> None:
    """Entry point: run the app and turn acp-trace errors into `acp-trace: ...` and exit 2."""
    try:
        code = app(standalone_mode=False)
    except AcpTraceError as exc:
        if _DEBUG["on"]:
            traceback.print_exc()
        sys.stderr.write(f"acp-trace: {exc}\n")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("acp-trace: aborted\n")
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        raise
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
