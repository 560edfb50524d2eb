"""The typer app every command module registers on, the options they share, and the entry
point that turns every error into one line and exit code 2. Only `acp_trace.cli` imports
typer. What goes to the terminal goes through `acp_trace.cli.terminal`."""

from __future__ import annotations

import errno
import inspect
import os
import signal
import sys
import traceback
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, get_args

import typer
from typer.core import TyperGroup

from acp_trace import __version__
from acp_trace.errors import AcpTraceError

if TYPE_CHECKING:  # the heavy modules load only when a command needs them
    from acp_trace.analysis import Analysis
    from acp_trace.fleet import FleetResult
    from acp_trace.trace.paths import Found
    from acp_trace.weight import WeightOptions


class _Root(TyperGroup):
    """The root command. Its help lists the commands in HELP_PANELS groups, each with the
    first paragraph of its help, whole, in click's plain format (typer gives it with
    `rich_markup_mode=None`: no rich to import, nothing in a help text read as markup).
    Built by `command()`, it makes a command only when it is run or its help shown
    (`infos`: the registered commands by name), so a start builds one, not sixteen."""

    infos: dict[str, Any] = {}  # noqa: RUF012 - set per instance by command()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.infos) or super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.infos:
            made = typer.main.get_command_from_info(
                self.infos[cmd_name], pretty_exceptions_short=True, rich_markup_mode=None
            )
            self.commands[cmd_name] = prepared(made)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        helps = {name: _help_of(info) for name, info in self.infos.items() if not info.hidden}
        if not self.infos:
            helps = {n: c.help or "" for n, c in self.commands.items() if not c.hidden}
        wide = max(map(len, helps), default=0)  # one column for every group
        for title, names in HELP_PANELS.items():
            rows = [(name.ljust(wide), _summary(helps[name])) for name in names if name in helps]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _help_of(info: Any) -> str:
    return str(info.help or inspect.getdoc(info.callback) or "")


def _summary(text: str) -> str:
    """The first paragraph of a help text, on one line."""
    return " ".join(text.split("\n\n", 1)[0].split())


app = typer.Typer(
    name="acp-trace",
    cls=_Root,
    help="Record and analyze Agent Client Protocol (ACP) traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# `--help` lists the commands in these groups, in the order a user meets them.
HELP_PANELS = {
    "Record and replay": ("record", "mock", "bridge", "watch"),
    "Analyze traces": ("summary", "replays", "fidelity", "check", "timeline", "latency", "rules"),
    "Compare runs": ("diff", "drive"),
    "Write files": ("report", "plot", "export", "compact"),
    "Convert other captures": ("import",),
    "Serve a coding agent": ("mcp",),
    "Try it": ("demo", "demo-agent", "demo-client"),
}

_DEBUG = {"on": False}


Traces = Annotated[
    list[str], typer.Argument(metavar="TRACE", help="Trace files, directories or globs.")
]


Format = Annotated[
    Literal["table", "json", "csv"], typer.Option("--format", "-f", help="Output format.")
]


def _marker_meta(value: str | None) -> str | None:
    """--marker-meta checked when the command line is read, before any trace is."""
    if value is not None:
        from acp_trace.analysis.vendor_events import parse
        from acp_trace.errors import UsageError

        try:
            parse(value)
        except UsageError as exc:
            raise typer.BadParameter(str(exc).removeprefix(f"--marker-meta {value!r}: ")) from None
    return value


MarkerMeta = Annotated[
    str | None,
    typer.Option(
        "--marker-meta",
        metavar="PATH[=VALUE]",
        help="A vendor end-of-replay event: a dotted `_meta` path (matched whole) with an "
        "optional JSON value, e.g. vendor.replayDone=true. It marks a v1 load's replay (which "
        "then expects it) and, in v2, is where the gap is measured from. claude-agent-acp's "
        "jetbrains.air.loadReplayEnd is known without it.",
        callback=_marker_meta,
    ),
]


def _checked(parse: Any) -> Any:
    """A typer callback that checks each value with `parse` (a UsageError: one line) when the
    command line is read, before any trace is."""

    def callback(value: Any) -> Any:
        from acp_trace.errors import UsageError

        if value is None:
            return value
        for v in value if isinstance(value, list) else [value]:
            try:
                parse(v)
            except UsageError as exc:
                said = str(exc).split(": ", 1)[-1]
                raise typer.BadParameter(f"{v!r}: {said}") from None
        return value

    return callback


def _frame_limit(value: str) -> None:
    from acp_trace.weight.options import weight_options

    weight_options(frame_limits=[value])


def _deadline(value: str) -> None:
    from acp_trace.weight.options import weight_options

    weight_options(deadlines=[value])


def _quiet(value: str) -> None:
    from acp_trace.weight.options import weight_options

    weight_options(quiet_window_ms=value)


FrameLimit = Annotated[
    list[str] | None,
    typer.Option(
        "--frame-limit",
        metavar="BYTES[=NAME]",
        help="A client's line limit to check besides the known ones (repeatable): 65536, "
        "16MiB or 4MB, and a name if you like (16MiB=my-editor).",
        callback=_checked(_frame_limit),
    ),
]
Deadline = Annotated[
    list[str] | None,
    typer.Option(
        "--deadline",
        metavar="MS[=NAME]",
        help="A client's deadline in milliseconds to check silences against besides the known "
        "ones (repeatable), and a name if you like (30000=my-editor).",
        callback=_checked(_deadline),
    ),
]
QuietWindow = Annotated[
    str | None,
    typer.Option(
        "--quiet-window",
        metavar="MS",
        help="The quiet-window client: it takes a replay for over after this many ms without "
        "a session/update (default 250).",
        callback=_checked(_quiet),
    ),
]
QuietCap = Annotated[
    str | None,
    typer.Option(
        "--quiet-cap",
        metavar="MS",
        help="The quiet-window client waits at most this many ms after its request "
        "(default 10000).",
        callback=_checked(_quiet),
    ),
]


def weight_of(
    frame_limit: list[str] | None,
    deadline: list[str] | None,
    quiet_window: str | None,
    quiet_cap: str | None,
) -> WeightOptions:
    """The weight pass's options from the four of the command line (checked already)."""
    from acp_trace.weight.options import weight_options

    return weight_options(frame_limit or (), deadline or (), quiet_window, quiet_cap)


# The input formats (acp_trace.trace.importers.FORMATS; a test keeps the two equal). Listed
# here so that `record` does not import the importers to build its options.
SourceFormat = Literal[
    "acp-trace",
    "jsonrpc",
    "zed",
    "conductor",
    "inspector",
    "thinkwell",
    "acpx",
    "vibe",
    "acp-devtools",
]
From = Annotated[
    SourceFormat | None,
    typer.Option(
        "--from",
        metavar="FORMAT",
        help=f"Input format: {', '.join(get_args(SourceFormat)[:-1])} or "
        f"{get_args(SourceFormat)[-1]} (default: detected from the content).",
    ),
]


Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        min=1,
        help="Processes to use: several traces are analyzed in groups, one large trace is read "
        "in byte ranges (the result is the same; see docs/performance.md).",
    ),
]


@app.callback(invoke_without_command=True)
def _root(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show tracebacks on errors (also after the command)."),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.")
    ] = False,
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
    weight: WeightOptions | None = None,
) -> Analysis:
    """Read traces (with a progress bar on a terminal), warn about each file skipped, and
    return their Analysis: the one every command builds its output from."""
    from acp_trace.analysis import analyze
    from acp_trace.cli.terminal import progress_bar, warn_skipped

    with progress_bar("reading") as progress:
        a = analyze(
            traces,
            marker_meta=marker_meta,
            fmt=fmt,
            progress=progress,
            workers=workers,
            weight=weight,
        )
    warn_skipped(a.records)
    return a


Scheduler = Annotated[
    str | None,
    typer.Option(
        metavar="ADDRESS",
        help="Analyze on this Dask scheduler (tcp://HOST:PORT), partition by partition; needs "
        "pip install -e '.[fleet]' in the clone. The output is the same as a local run's.",
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
    tables: tuple[str, ...] | None = None,
    weight: WeightOptions | None = None,
) -> Analysis | FleetResult:
    """The Analysis, or the same tables from the fleet runner: on a Dask `scheduler`, or with
    `workers` > 1 over several traces on a local pool of that many processes (each analyzes a
    group of traces whole, passes included; `tables`: those the command shows, of replays,
    findings, turns and requests). One trace with `workers` is read in byte ranges."""
    found = _several_traces(traces, workers) if scheduler is None else None
    if scheduler is None and found is None:
        return analyze_paths(traces, marker_meta, fmt, workers, weight)
    from acp_trace.cli.terminal import warn_fleet
    from acp_trace.fleet import run

    result = run(
        traces,
        workers=None if scheduler else workers,
        scheduler=scheduler,
        marker_meta=marker_meta,
        fmt=fmt,
        schema=schema,
        tables=tables,
        found=found,
        weight=weight,
    )
    warn_fleet(result)
    return result


def _several_traces(traces: list[str], workers: int | None) -> list[Found] | None:
    """The files the paths name when `workers` > 1 and they are more than one, else None."""
    if workers is None or workers < 2:
        return None
    from acp_trace.trace.paths import find_traces

    found = find_traces(traces)
    return found if len(found) > 1 else None


def exit_if_failed(tables: Analysis | FleetResult) -> None:
    """Exit 2 after the output when a fleet run could not analyze some files."""
    failed = getattr(tables, "failed", None)
    if failed is not None and failed.height:
        raise typer.Exit(2)


def command() -> Any:
    """The click command of the app: the root alone, whose commands are made when they are
    run (`_Root`), grouped for `--help` (HELP_PANELS), flags shown without a type."""
    arrange_commands()
    shell = typer.Typer(
        name=app.info.name,
        cls=_Root,
        help=app.info.help,
        no_args_is_help=True,
        add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish)
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    shell.registered_callback = app.registered_callback
    root = typer.main.get_command(shell)
    assert isinstance(root, _Root)
    root.infos = {_name_of(info): info for info in app.registered_commands}
    return prepared(root)


def prepared(cmd: Any) -> Any:
    """A command whose flags show no type (typer would show `<bool>`) and are not coerced,
    and whose options' `[default: ...]` are never broken across lines."""
    from acp_trace.cli.metavars import readable

    help_option = cmd.get_help_option(typer.Context(cmd))
    for param in [*cmd.params, *([help_option] if help_option else [])]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
            _plain_flag(param)
        else:
            _plain_choice(param)
        readable(param)
        _whole_extra(param)
    return cmd


def _whole_extra(param: Any) -> None:
    """The `[default: 3.0; x>=0.0]` after an option's help, joined by no-break spaces: the
    help formatter wraps at spaces only, so the bracket stays on one line."""
    record = param.get_help_record

    def whole(ctx: Any) -> Any:
        found = record(ctx)
        if found is None:
            return None
        names, text = found
        head, sep, extra = text.rpartition("  [")
        if sep and extra.endswith("]"):
            text = f"{head}  [{extra.replace(' ', NO_BREAK)}"
        return names, text

    param.get_help_record = whole


NO_BREAK = "\N{NO-BREAK SPACE}"


def _plain_flag(param: Any) -> None:
    """A flag's value is a bool or nothing: typer's coercion of it (which builds a pydantic
    adapter, 50 ms of imports, for a flag that was not given) is passed by."""
    from typer._coercion import PassThroughRuntimeParam

    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and descriptor.annotation is bool:
        param._runtime_param = PassThroughRuntimeParam(descriptor.parameter_info, bool)


def _plain_choice(param: Any) -> None:
    """A choice of strings (`--format text|json`) is checked here against its choices,
    without the pydantic adapter typer builds for it (so `rules` starts at once)."""
    from typer._coercion import PassThroughRuntimeParam

    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not descriptor.is_choice or descriptor.is_list:
        return
    choices = tuple(descriptor.choices or ())
    if not choices or not all(isinstance(c, str) for c in choices):
        return

    class Choice(PassThroughRuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if value in choices:
                return value
            listed = ", ".join(repr(c) for c in choices)
            raise typer.BadParameter(f"{value!r} is not one of {listed}", ctx=ctx, param=param)

    param._runtime_param = Choice(descriptor.parameter_info, str)


def arrange_commands() -> None:
    """Put the registered commands in HELP_PANELS order, each with its panel."""
    order = [name for names in HELP_PANELS.values() for name in names]
    panel = {name: title for title, names in HELP_PANELS.items() for name in names}
    app.registered_commands.sort(key=lambda info: order.index(_name_of(info)))
    for info in app.registered_commands:
        info.rich_help_panel = panel[_name_of(info)]


def _name_of(info: Any) -> str:
    return str(info.name or info.callback.__name__.replace("_", "-"))


def main() -> None:
    """Entry point: run the app; usage errors and acp-trace errors become one line
    `acp-trace: ...` on stderr and exit code 2 (a traceback too with --debug)."""
    from acp_trace.cli.terminal import usage_message

    _exit_on_termination()
    args = global_flags(sys.argv[1:])
    try:
        code = command().main(args=args, prog_name="acp-trace", standalone_mode=False)
        if code == 130 and _INTERRUPTED:  # Ctrl-C (typer's Exit(130))
            _leave(_fail(stopped_by(signal.SIGINT), 130))
    except typer.Abort:
        code = 130
    except Stopped as exc:
        _leave(_fail(stopped_by(exc.signum), 128 + exc.signum))
    except AcpTraceError as exc:
        code = _fail(str(exc))
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:  # a name past the file system's limit, anywhere
            raise
        from acp_trace.files import name_too_long

        code = _fail(name_too_long(os.fsdecode(exc.filename or "")))
    except Exception as exc:
        message = usage_message(exc)
        if message is None:
            raise
        if not message:  # no arguments at all: the help (its text is the error's)
            typer.echo(exc.format_message())  # type: ignore[attr-defined]
        code = _fail(message, getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def global_flags(args: list[str]) -> list[str]:
    """The arguments with `--debug` taken from wherever it stands before a `--` (after the
    command too, as people type it), set, and put first, where the root takes it."""
    cut = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:cut]:
        return args
    _DEBUG["on"] = True
    return ["--debug", *(a for a in args[:cut] if a != "--debug"), *args[cut:]]


def _exit_on_termination() -> None:
    """SIGTERM and SIGHUP end the command as `sys.exit(128 + N)` does, so that what it made
    is cleaned up on the way out (the reading pool's workers and its files of rows); a signal
    the caller ignores (`nohup`) stays ignored. `record` installs its own for the agent.
    SIGINT raises KeyboardInterrupt as it does by default, and is noted: `main` says in one
    line that the command was interrupted."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


_INTERRUPTED: list[int] = []  # SIGINT came (a command that handles it sets its own handler)


def _interrupt(signum: int, frame: Any) -> None:
    _INTERRUPTED.append(signum)
    signal.default_int_handler(signum, frame)


class Stopped(SystemExit):
    """SIGTERM or SIGHUP: the command ends as `sys.exit(128 + N)` does, with one line."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _terminated(signum: int, _frame: object) -> None:
    raise Stopped(signum)


def _leave(code: int) -> NoReturn:
    """Exit at once after a signal, without the interpreter's finalization (freeing every
    object and module: seconds on a loaded machine, after a run that made many). What the
    command started is gone by now (workers reaped, temporary files removed, by the
    `finally`s on the way here); the exit handlers run (multiprocessing's removes its
    fork server's folder) and the standard streams are flushed."""
    import atexit

    with suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(code)


def stopped_by(signum: int) -> str:
    """The one line a command stopped by a signal prints: all it started is gone."""
    name = signal.Signals(signum).name
    return f"interrupted by {name}{' (Ctrl-C)' if signum == signal.SIGINT else ''}; stopped before the end"


def _fail(message: str, code: int = 2) -> int:
    from acp_trace.render.escape import terminal

    if _DEBUG["on"]:
        traceback.print_exc()
    if message:
        sys.stderr.write(f"acp-trace: {terminal(message)}\n")
    return code
