"""The demo commands: the whole tool in one run, the reference agent and the scripted client."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import app
from acp_trace.cli.numbers import Number
from acp_trace.cli.terminal import warn
from acp_trace.quantities import counted

Faults = Annotated[
    list[str] | None,
    typer.Option(
        "--fault", metavar="RULE", help="Break one rule on purpose (repeatable); see --list-faults."
    ),
]
GAP_FORMS = "SECONDS (0.5), uniform:A,B, lognormal:MU,SIGMA (lognormal:0.7,0.5) or exponential:MEAN"


def _check_gap(value: str) -> str:
    """--gap as the agent reads it, or a usage error that shows what it must look like."""
    from acp_trace.demo.history import parse_gap

    try:
        parse_gap(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r}: expected {GAP_FORMS}") from None
    return value


@app.command()
def demo(
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="DIR", help="Keep the traces and report here."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", hidden=True)] = None,
) -> None:
    """Record the demo client and agent through the tap, then summarize and write the report."""
    import tempfile

    from acp_trace.cli.terminal import emit, steps, width
    from acp_trace.demo import run as demo_mod
    from acp_trace.files import check_directory_target

    chosen = output or out  # --out: the name before -o/--output, kept as a hidden alias
    if chosen is not None:
        check_directory_target(chosen)
    folder = chosen or Path(tempfile.mkdtemp(prefix="acp-trace-demo-"))  # kept: the report
    with steps("demo") as progress:
        traces = demo_mod.run_demo(folder, progress=progress)
        progress(len(traces), len(traces), f"recorded {counted(len(traces), 'trace')} in {folder}")
        made = demo_mod.build_outputs(traces, folder, progress=progress, width=width())
    files = made.report
    where = f"\nReport: {files.html} (also {files.markdown.name}, {counted(len(files.charts), 'chart')})\n"
    emit(made.summary + where)


@app.command("demo-agent")
def demo_agent(
    turns: Annotated[
        int,
        typer.Option(
            min=0,
            help="Turns of fabricated history per --session session (a new one starts empty).",
        ),
    ] = 3,
    pace: Annotated[
        float,
        typer.Option(parser=Number(0, 3600), help="Seconds between two replayed updates."),
    ] = 0.0,
    gap: Annotated[
        str,
        typer.Option(
            metavar="SPEC",
            callback=_check_gap,
            help=f"Marker to response delay: {GAP_FORMS}.",
        ),
    ] = "0",
    seed: Annotated[int, typer.Option(help="Seed of the random delays.")] = 0,
    children: Annotated[
        int, typer.Option(min=0, help="Child sessions per session (v2 replay).")
    ] = 0,
    session: Annotated[
        list[str] | None,
        typer.Option(metavar="ID", help="A session id the agent knows (repeatable)."),
    ] = None,
    new_session_prefix: Annotated[
        str,
        typer.Option(
            metavar="PREFIX",
            help="session/new names its sessions PREFIX1, PREFIX2, ... (recordings analyzed "
            "together are one session where their ids are equal).",
        ),
    ] = "sess_new_",
    fault: Faults = None,
    list_faults: Annotated[bool, typer.Option("--list-faults", help="List faults, exit.")] = False,
) -> None:
    """Run the reference ACP agent (v1 and v2) on stdin/stdout."""
    from acp_trace.demo import agent
    from acp_trace.errors import UsageError

    if list_faults:
        typer.echo("".join(f"{name}: {text}\n" for name, text in agent.FAULTS.items()), nl=False)
        return
    try:
        opts = agent.AgentOptions(
            turns=turns,
            pace=pace,
            gap=gap,
            seed=seed,
            children=children,
            sessions=tuple(session or ("sess_demo",)),
            new_prefix=new_session_prefix,
            faults=frozenset(fault or ()),
        )
    except ValueError as exc:
        raise UsageError(f"demo-agent: {exc}") from exc
    raise typer.Exit(agent.run_agent(opts))


@app.command("demo-client")
def demo_client(
    command: Annotated[
        list[str], typer.Argument(metavar="AGENT", help="The agent command, after `--`.")
    ],
    protocol: Annotated[
        int, typer.Option(min=1, max=2, help="ACP version to ask for (1 or 2).")
    ] = 2,
    resumes: Annotated[int, typer.Option(min=0, help="Replaying resumes (v2) or loads (v1).")] = 1,
    session: Annotated[
        str | None, typer.Option(metavar="ID", help="Resume this session (else new).")
    ] = None,
    cwd: Annotated[str | None, typer.Option(help="cwd sent to the agent.")] = None,
    prompt: Annotated[
        list[str] | None,
        typer.Option(
            metavar="TEXT",
            help="A prompt turn before the replays (repeatable, in order); with --session the "
            "session is first opened by a resume without replay (v1 with no resume: a load).",
        ),
    ] = None,
    cursor: Annotated[str, typer.Option(help="v2 replayFrom type; `none` omits it.")] = "start",
    timeout: Annotated[
        float,
        typer.Option(
            parser=Number(0, 1e9, forever="no limit"),
            help="Seconds to wait for each response.",
        ),
    ] = 60.0,
    grace: Annotated[
        float,
        typer.Option(parser=Number(0, 1e9), help="Seconds between closing stdin and SIGTERM."),
    ] = 5.0,
    save: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Save every byte received.")
    ] = None,
    save_sent: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Save every byte sent.")
    ] = None,
    summary: Annotated[bool, typer.Option(help="Print one line per request.")] = False,
    air: Annotated[
        bool,
        typer.Option(
            "--air",
            help="Advertise JetBrains AIR's loadReplayEnd capability in initialize: "
            "claude-agent-acp (and demo-agent) then mark the end of a replay.",
        ),
    ] = False,
) -> None:
    """Drive an agent: initialize (--air: JetBrains AIR's capability for an end of replay),
    session/new or --session, each --prompt, N replaying resumes (--cursor) or loads; answer
    its permission requests; --save and --save-sent keep the bytes, --summary a line a request."""
    import os

    from acp_trace.demo import client
    from acp_trace.files import check_file_target

    for target in (save, save_sent):
        if target is not None:
            check_file_target(target)
    opts = client.ClientOptions(
        command=tuple(command),
        protocol=protocol,
        resumes=resumes,
        session=session,
        cwd=cwd or os.getcwd(),
        prompts=tuple(prompt or ()),
        cursor=cursor,
        timeout=timeout,
        grace=grace,
        save=save,
        save_sent=save_sent,
        air=air,
    )
    result = client.run_client(opts)
    if summary:
        typer.echo(client.format_result(result), nl=False)
    if not result.finished:
        warn(f"demo-client: {result.problem}")
        raise typer.Exit(1)
