"""`acp-trace mock`: serve a recording back as a stdio ACP agent (docs/mock.md)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Annotated

import typer

from acp_trace.cli.app import app


@app.command()
def mock(
    traces: Annotated[
        list[str] | None,
        typer.Argument(
            help="The recording: trace files (several: one per protocol version).",
            metavar="TRACE...",
        ),
    ] = None,
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
    list_faults: Annotated[bool, typer.Option("--list-faults", help="List faults, exit.")] = False,
    air: Annotated[
        bool,
        typer.Option(
            "--air",
            help="To a client that advertises JetBrains AIR's loadReplayEnd capability, end "
            "each load's or replaying resume's replay with claude-agent-acp's end-of-replay "
            "event (when the recording has none).",
        ),
    ] = False,
) -> None:
    """Serve a recorded agent on stdin/stdout, at its recorded pace, with the client's ids."""
    from acp_trace.errors import UsageError

    if list_faults:
        from acp_trace.demo.faults import FAULTS

        listed = [f"{f.usage(name)}: {f.says}\n" for name, f in FAULTS.items() if f.mock]
        typer.echo("".join(listed), nl=False)
        return
    if not traces:
        raise UsageError("mock: expected a TRACE to serve")
    from acp_trace.mock import MockOptions, prepare, run_mock

    options = MockOptions(
        traces=tuple(traces),
        sessions=tuple(session or ()),
        speed=speed,
        faults=tuple(fault or ()),
        gap=gap,
        seed=seed,
        answer_timeout=answer_timeout,
        air=air,
    )
    code = run_mock(prepare(options), sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer)
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:  # the recorded agent was killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    # At once: when the recording ends the agent, a thread still waits on stdin, and
    # finalizing the interpreter under it would abort.
    os._exit(code)
