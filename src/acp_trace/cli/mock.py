"""`acp-trace mock`: serve a recording back as a stdio ACP agent (docs/mock.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from typing import Annotated

import typer

from acp_trace.cli.app import app


def _list_faults(value: bool) -> None:
    """`--list-faults`: print the faults the mock takes and exit (no TRACE needed)."""
    if not value:
        return
    from acp_trace.demo.faults import FAULTS

    listed = [f"{f.usage(name)}: {f.says}\n" for name, f in FAULTS.items() if f.mock]
    typer.echo("".join(listed), nl=False)
    raise typer.Exit(0)


@app.command()
def mock(
    traces: Annotated[
        list[str],
        typer.Argument(
            help="The recording: trace files (several: one per protocol version).",
            metavar="TRACE",
        ),
    ],
    session: Annotated[
        list[str] | None,
        typer.Option(
            help="Serve any session id the recording lacks as this recorded one; "
            "CLIENT=RECORDED maps one id (repeatable).",
        ),
    ] = None,
    speed: Annotated[
        float, typer.Option(help="Pace factor: 1 as recorded, 2 twice as fast, 0 no waiting.")
    ] = 1.0,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            help="Bend each resume and load to break a rule (repeatable); see --list-faults."
        ),
    ] = None,
    gap: Annotated[
        str | None,
        typer.Option(
            help="Extra wait at the end of each replay, before the rest and the "
            "response: SECONDS, uniform:A,B, lognormal:MU,SIGMA, exponential:MEAN."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random gaps.")] = 0,
    answer_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the client's answer to an agent request.")
    ] = 60.0,
    list_faults: Annotated[
        bool,
        typer.Option(
            "--list-faults", is_eager=True, callback=_list_faults, help="List faults, exit."
        ),
    ] = False,
    air: Annotated[
        bool,
        typer.Option(
            "--air",
            help="To a client that advertises JetBrains AIR's loadReplayEnd capability, end "
            "each load's or replaying resume's replay with claude-agent-acp's end-of-replay "
            "event (when the recording has none).",
        ),
    ] = False,
    no_redact_content: Annotated[
        bool,
        typer.Option(
            "--no-redact-content",
            help="Serve credentials found in free text as recorded (by default they are"
            " replaced, as `record` does, in traces recorded before it did).",
        ),
    ] = False,
) -> None:
    """Serve a recorded agent on stdin/stdout, at its recorded pace, with the client's ids."""
    _exit_on_signals()
    from acp_trace.mock import MockOptions, prepare, run_mock

    options = MockOptions(
        traces=tuple(traces),
        sessions=tuple(session or ()),
        speed=speed,
        faults=tuple(fault or ()),
        gap=gap,
        seed=seed,
        answer_timeout=answer_timeout,
        redact_content=not no_redact_content,
        air=air,
    )
    served = prepare(options)  # an error here is the usual one line and exit 2
    try:
        code = run_mock(served, sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer)
    except BaseException:  # a bug: say where, but never finalize under the reader thread
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a client gone leaves bytes unwritten
            stream.flush()
    if code < 0:  # the recorded agent was killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    # At once: when the recording ends the agent, a thread still waits on stdin, and
    # finalizing the interpreter under it would abort.
    os._exit(code)


def _exit_on_signals() -> None:
    """SIGTERM, SIGINT and SIGHUP end the mock at once with 128 + N, as an agent ends: every
    line it sent is already flushed, nothing needs cleaning up, and finalizing the interpreter
    while the reader thread holds stdin would abort it ("Fatal Python error"). A signal the
    caller ignores (`nohup`) stays ignored."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _exit_now)


def _exit_now(signum: int, _frame: object) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(128 + signum)
