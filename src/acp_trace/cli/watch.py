"""`acp-trace watch`: follow traces as the tap writes them, on a Textual screen, or as JSON
lines of events when asked (`--format jsonl`) or when stdout is no terminal."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Literal

import typer

from acp_trace.cli.app import (
    Deadline,
    FrameLimit,
    MarkerMeta,
    QuietCap,
    QuietWindow,
    Stopped,
    app,
    weight_of,
)
from acp_trace.errors import UsageError

WATCH_EXTRA = "pip install -e '.[watch]' in the acp-trace clone"


@app.command()
def watch(
    traces: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TRACE|DIR",
            help="Trace files or folders to follow (default: the folder `record` writes to "
            "without -o: $ACP_TRACE_DIR, else $XDG_STATE_HOME/acp-trace/traces).",
        ),
    ] = None,
    fmt: Annotated[
        Literal["screen", "jsonl"] | None,
        typer.Option(
            "--format",
            "-f",
            help="screen (a terminal UI) or jsonl (one JSON line per event); default: screen "
            "on a terminal, else jsonl.",
        ),
    ] = None,
    interval: Annotated[
        float,
        typer.Option(
            min=0.05,
            help="Seconds between two analyses while nothing is decided (outcomes "
            "and trace ends are analyzed at once).",
        ),
    ] = 1.0,
    until_ended: Annotated[
        bool,
        typer.Option("--until-ended", help="jsonl: stop once every trace followed has ended."),
    ] = False,
    once: Annotated[
        bool,
        typer.Option("--once", help="jsonl: print the events of what the files hold now, stop."),
    ] = False,
    marker_meta: MarkerMeta = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
) -> None:
    """Watch replays happen, live: sessions, timelines, the replay in progress and its gap.

    Follows the trace files as `acp-trace record` writes them (new traces in a folder join by
    themselves), never writing or locking them. Outcomes and findings are those of `check`
    and `replays`, decided as the records arrive. Keys on the screen: `?`."""
    from acp_trace.watch.follow import RECENT_SECONDS, check_roots

    roots = check_roots(traces or [_default_folder()])
    if fmt is None:
        fmt = "screen" if sys.stdout.isatty() and sys.stdin.isatty() else "jsonl"
    if fmt == "screen" and (until_ended or once):
        raise UsageError(
            "--until-ended and --once go with --format jsonl (the screen runs until q)"
        )
    from acp_trace.watch.engine import Engine

    engine = Engine(
        roots,
        interval=0.0 if once else interval,
        marker_meta=marker_meta,
        background=not once,  # following and drawing go on while the analyzer works
        recent=None if once else RECENT_SECONDS,  # --once reads every trace, whatever its age
        settle=once,  # what the files hold, each trace's events in time order
        weight=weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    engine.judge.warm()
    try:
        if fmt == "jsonl":
            _stream(engine, until_ended=until_ended, once=once)
            if once and not engine.live.traces:
                from acp_trace.errors import InputError

                raise InputError(
                    f"{', '.join(roots)}: no trace to read (looked for acp-trace v1 traces)"
                )
        else:
            _screen(engine)
    finally:
        engine.close()


def _default_folder() -> str:
    from acp_trace.record.trace_file import TRACE_DIR_ENV, default_trace_dir

    folder = os.environ.get(TRACE_DIR_ENV) or str(default_trace_dir(os.environ))
    if not os.path.isdir(folder):
        raise UsageError(
            f"{folder}: no such directory (the folder `acp-trace record` writes to without "
            "-o; record a trace first, or name a trace or a folder)"
        )
    return folder


def _stream(engine: object, *, until_ended: bool, once: bool) -> None:
    from acp_trace.watch.engine import Engine
    from acp_trace.watch.stream import run_jsonl

    assert isinstance(engine, Engine)

    def write(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()

    try:
        run_jsonl(engine, write, until_ended=until_ended, once=once)
    except BrokenPipeError:  # `watch | head`: the reader is gone, and so is the need
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _screen(engine: object) -> None:
    try:
        import textual  # noqa: F401
    except ImportError:
        raise UsageError(
            f"watch on a terminal needs Textual: {WATCH_EXTRA} (or use --format jsonl)"
        ) from None
    from acp_trace.watch.engine import Engine
    from acp_trace.watch.screen import WatchApp

    assert isinstance(engine, Engine)
    screen = WatchApp(engine)
    screen.run()
    if screen.stopped_by is not None:  # the terminal is itself again: say so, 128 + N
        raise Stopped(screen.stopped_by)
