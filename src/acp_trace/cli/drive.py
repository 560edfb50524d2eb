"""`acp-trace drive TRACE -- AGENT...`: play a recording's client side against a live agent."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from acp_trace.cli.app import Deadline, FrameLimit, QuietCap, QuietWindow, app, weight_of

AGENT = "acp_trace.drive.agent"  # ctx.meta: what followed `--` (None: no `--`)


class DriveCommand(TyperCommand):
    """`drive`'s arguments: options anywhere before `--` (`drive REC -o NEW -- AGENT` as
    much as `drive -o NEW REC -- AGENT`); everything after `--` is the agent's command, never
    read as an option of drive's."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        cut = args.index("--") if "--" in args else None
        ctx.meta[AGENT] = None if cut is None else args[cut + 1 :]
        parsed: list[str] = super().parse_args(ctx, args if cut is None else args[:cut])
        return parsed

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [p for p in super().collect_usage_pieces(ctx) if "AGENT" not in p]
        return [*pieces, "-- AGENT [ARGS...]"]


def agent_command(ctx: typer.Context, stray: list[str] | None) -> tuple[str, ...]:
    """The agent's argv (what followed `--`); UsageError when there is no `--`, nothing after
    it, or an argument between TRACE and `--`."""
    from acp_trace.errors import UsageError

    if stray:
        raise UsageError(
            f"drive: {stray[0]!r}: expected one TRACE before `--`, got another argument (the "
            "agent's command goes after `--`: drive [OPTIONS] TRACE -- AGENT [ARGS...])"
        )
    agent = ctx.meta.get(AGENT)
    if agent is None:
        raise UsageError(
            "drive: expected `--` and the agent's command after TRACE "
            "(drive [OPTIONS] TRACE -- AGENT [ARGS...])"
        )
    if not agent:
        raise UsageError("drive: expected the agent's command after `--`, found nothing")
    return tuple(agent)


@app.command(cls=DriveCommand)
def drive(
    ctx: typer.Context,
    trace: Annotated[
        Path, typer.Argument(help="The recording whose client side to play.", metavar="TRACE")
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The agent and its arguments, after `--`.",
            metavar="AGENT",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="FILE", help="Write the new trace to this file."),
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="Write the new trace into this directory (default: $ACP_TRACE_DIR, else "
            "the tap's trace folder).",
        ),
    ] = None,
    protocol: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Send this protocolVersion in initialize instead of the recorded one.",
        ),
    ] = None,
    speed: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Pace of the recorded pauses between client messages: 1 as recorded, 2 twice"
            " as fast, 0 as fast as the answers come.",
        ),
    ] = 1.0,
    session: Annotated[
        list[str] | None,
        typer.Option(
            metavar="RECORDED=LIVE",
            help="Send LIVE wherever the recording names session RECORDED (a session the agent"
            " has stored; repeatable).",
        ),
    ] = None,
    cwd: Annotated[
        str | None,
        typer.Option(
            metavar="DIR", help="Send this cwd in session requests instead of the recorded one."
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds to wait for each answer the next message needs.")
    ] = 60.0,
    grace: Annotated[
        float,
        typer.Option(min=0.0, help="Seconds the agent may take to exit after the last answer."),
    ] = 5.0,
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            metavar="LIMIT",
            help="Also flag a request or gap this much slower than recorded: a share (20%) and/or"
            " a duration (50ms); repeatable, every one given must be exceeded. Default: timings"
            " are shown, not judged (one sample per side).",
        ),
    ] = None,
    history_drop: Annotated[
        float,
        typer.Option(
            "--history-drop",
            metavar="PCT",
            min=0.0,
            max=100.0,
            help="Flag a replay that carried this share fewer messages or bytes than recorded "
            "(default 10). Messages missing or under other ids are flagged whatever it is.",
        ),
    ] = 10.0,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
) -> None:
    """Play a recording's client side against AGENT through the tap; say what differed from the
    recording; exit 1 when something got worse (options anywhere before `--`)."""
    from acp_trace.analysis.diff import parse_threshold
    from acp_trace.cli.terminal import emit, width
    from acp_trace.drive import DriveOptions, run_drive
    from acp_trace.drive.compare import Threshold
    from acp_trace.drive.report import format_drive
    from acp_trace.errors import UsageError

    agent = agent_command(ctx, command)
    pct: float | None = None
    ms: float | None = None
    for text in threshold or ():
        try:
            p, m = parse_threshold(text)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        pct, ms = p if p is not None else pct, m if m is not None else ms
    options = DriveOptions(
        recording=trace,
        command=agent,
        output=output,
        directory=directory,
        protocol=protocol,
        speed=speed,
        timeout=timeout,
        grace=grace,
        sessions=tuple(session or ()),
        cwd=cwd,
        threshold=Threshold(pct, ms),
        history_drop=history_drop,
        weight=weight_of(frame_limit, deadline, quiet_window, quiet_cap),
    )
    outcome = run_drive(options)
    emit(format_drive(outcome, width()))
    if outcome.regressed:
        raise typer.Exit(1)
