"""What the commands write to the terminal: output (escaped, fitted to the width, coloured only
on a terminal without NO_COLOR), warnings, progress bars, and usage errors as one line."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Literal

import typer

from acp_trace.render.escape import json_safe, terminal, terminal_lines

if TYPE_CHECKING:  # rich loads when a command prints (`record` never pays for it)
    import polars as pl
    from rich.console import Console, RenderableType

    from acp_trace.fleet import FleetResult

Kind = Literal["text", "json", "data", "styled"]
PROGRESS_FROM = 20  # traces: fewer read in a moment, with no bar


def stdout_console() -> Console:
    """A console on stdout: its width is the terminal's (COLUMNS when set; 80 when stdout,
    stdin and stderr are no terminal); colour only on a terminal and without NO_COLOR."""
    return _console(sys.stdout)


def _console(file: IO[str]) -> Console:
    from rich.console import Console

    return Console(file=file, markup=False, emoji=False, highlight=False)


def width() -> int | None:
    """The width text output is fitted to: the terminal's; None (not fitted, never wrapped)
    when stdout is no terminal (a pipe or a file gets every table whole, one line a row)."""
    console = stdout_console()
    return console.width if console.is_terminal else None


def colour() -> bool:
    """True when output may be coloured: stdout is a terminal and NO_COLOR is not set."""
    console = stdout_console()
    return console.is_terminal and not console.no_color and console.color_system is not None


def emit(text: str, kind: Kind = "text") -> None:
    """Write one output to stdout. `text` output is escaped for the terminal (the renderers
    escape each value already: this is the last line of defence); `styled` is text with the
    ANSI colours of a rich rendering, whose cells are escaped already; JSON gets JSON escapes
    for the characters a terminal acts on (same value); `data` (CSV, XML) is written as it
    is, except onto a terminal, where it is escaped like text."""
    if kind == "json":
        text = json_safe(text)
    elif kind == "text" or (kind == "data" and sys.stdout.isatty()):
        text = terminal_lines(text)
    sys.stdout.write(text)
    sys.stdout.flush()


def wrapped(text: str, columns: int | None) -> str:
    """`text` with each line longer than `columns` wrapped at spaces, its continuation lines
    indented two more than it; a word longer than the line (an id, a path) stays whole, on a
    line of its own. Unchanged when `columns` is None (a pipe or a file)."""
    import textwrap

    if columns is None:
        return text
    out = []
    for line in text.split("\n"):
        if len(line) <= columns:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        out.extend(
            textwrap.wrap(
                line.lstrip(" "),
                columns,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def emit_wrapped(text: str, kind: Kind = "text") -> None:
    """`emit` of prose (summary, check): on a terminal, its long lines wrapped at spaces
    (`wrapped`) rather than by the terminal in the middle of a word."""
    emit(wrapped(text, width()), kind)


def emit_table(renderable: RenderableType, *, fit: bool = True) -> None:
    """Render a rich table (or group) at the terminal's width (`fit`) or as wide as it is
    (not `fit`, or stdout is no terminal)."""
    from acp_trace.render.report.tables import to_text

    styled = colour()
    emit(
        to_text(renderable, width() if fit else None, color=styled), "styled" if styled else "text"
    )


def warn(message: str) -> None:
    """One line on stderr: `acp-trace: MESSAGE` (escaped)."""
    sys.stderr.write(f"acp-trace: {terminal(message)}\n")


def warn_skipped(records: pl.DataFrame) -> None:
    """One line on stderr per file passed over while reading (the rest was analyzed)."""
    from acp_trace.trace.reader import skipped_inputs

    for trace, problem in skipped_inputs(records).rows():
        warn(f"skipped {trace}: {problem}")


def warn_fleet(result: FleetResult) -> None:
    """One line on stderr per file a fleet run passed over or could not analyze."""
    for trace, problem in result.skipped.rows():
        warn(f"skipped {trace}: {problem}")
    for trace, problem in result.failed.rows():
        warn(f"could not analyze {trace}: {problem}")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback (done, total) drawn as a rich bar on stderr, from PROGRESS_FROM
    traces on and only when stderr is a terminal; None otherwise. The bar is gone after."""
    console = _console(sys.stderr)
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        f"{label}:", BarColumn(), MofNCompleteColumn(), "traces", TimeElapsedColumn(),
        console=console, transient=True,
    )  # fmt: skip
    task = bar.add_task(label, total=None)

    def show(done: int, total: int) -> None:
        if total >= PROGRESS_FROM:
            bar.start()
            bar.update(task, completed=done, total=total)

    try:
        yield show
    finally:
        bar.stop()


@contextmanager
def step(what: str) -> Iterator[None]:
    """A spinner on stderr while a long step runs (only on a terminal)."""
    console = _console(sys.stderr)
    if not console.is_terminal:
        yield
        return
    with console.status(what):
        yield


@contextmanager
def steps(label: str) -> Iterator[Callable[[int, int, str], None]]:
    """A progress callback (done, total, what comes next) for a run of steps: a rich bar on
    stderr on a terminal, else one line per step on stderr (`label: what`)."""
    console = _console(sys.stderr)
    if not console.is_terminal:

        def line(done: int, total: int, what: str) -> None:
            say(f"{label}: {what}")

        yield line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    bar = Progress(
        SpinnerColumn(), f"{label}:", BarColumn(bar_width=20), MofNCompleteColumn(),
        TextColumn("{task.description}"), console=console, transient=True,
    )  # fmt: skip
    task = bar.add_task("", total=None)

    def show(done: int, total: int, what: str) -> None:
        bar.start()
        bar.update(task, completed=done, total=total, description=terminal(what))

    try:
        yield show
    finally:
        bar.stop()


def say(message: str) -> None:
    """A line of progress on stderr, on a terminal or not (escaped)."""
    sys.stderr.write(terminal(message) + "\n")
    sys.stderr.flush()


def usage_message(exc: BaseException) -> str | None:
    """A usage error of typer (unknown option, bad value, missing argument) as one line:
    `COMMAND: what was wrong; see acp-trace COMMAND --help`. None for any other exception;
    '' when typer already printed the help (no arguments at all)."""
    if not isinstance(exc, typer.TyperException):
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":
        return ""
    # One line: click lists choices on lines of their own ("Choose from:\n\ta,\n\tb").
    message = " ".join(exc.format_message().replace("Value error, ", "").split()).rstrip(".")
    got = _input_of(exc)
    if got is not None and repr(got) not in message and str(got) not in message:
        message += f", got {got!r}"
    ctx = getattr(exc, "ctx", None)
    path = str(getattr(ctx, "command_path", "") or "acp-trace")
    where = path.removeprefix("acp-trace").strip()
    see = f"; see `{path} --help`"
    return f"{where}: {message}{see}" if where else f"{message}{see}"


def _input_of(exc: BaseException) -> object | None:
    """The value typer's validation refused, when it says (a pydantic error as the cause)."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:
        return None
    if isinstance(found, list) and found and isinstance(found[0], dict):
        return found[0].get("input")
    return None
