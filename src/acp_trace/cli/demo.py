"""The demo commands: the whole tool in one run, the reference agent and the scripted client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import app

Faults = Annotated[
    list[str] | None,
    typer.Option("--fault", help="Break one rule on purpose (repeatable); see --list-faults."),
]


@app.command()
def demo(
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Keep the traces and report here.")
    ] = None,
) -> None:
    """Record the demo client and agent through the tap, then summarize and write the report."""
    import tempfile

    from acp_trace.demo import run as demo_mod

    folder = out or Path(tempfile.mkdtemp(prefix="acp-trace-demo-"))  # kept: it has the report
    traces = demo_mod.run_demo(folder)
    typer.echo(f"recorded {len(traces)} traces in {folder}")
    typer.echo(demo_mod.build_outputs(traces, folder), nl=False)


@app.command("demo-agent")
def demo_agent(
    turns: Annotated[int, typer.Option(help="Turns of fabricated history per session.")] = 3,
    pace: Annotated[float, typer.Option(help="Seconds between two replayed updates.")] = 0.0,
    gap: Annotated[
        str,
        typer.Option(
            help="Marker to response delay: SECONDS, uniform:A,B, lognormal:MU,SIGMA, "
            "exponential:MEAN."
        ),
    ] = "0",
    seed: Annotated[int, typer.Option(help="Seed of the random delays.")] = 0,
    children: Annotated[int, typer.Option(help="Child sessions per session (v2 replay).")] = 0,
    session: Annotated[
        list[str] | None, typer.Option(help="A session id the agent knows (repeatable).")
    ] = None,
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
            faults=frozenset(fault or ()),
        )
    except ValueError as exc:
        raise UsageError(f"demo-agent: {exc}") from exc
    raise typer.Exit(agent.run_agent(opts))


@app.command("demo-client")
def demo_client(
    command: Annotated[list[str], typer.Argument(help="The agent command, after `--`.")],
    protocol: Annotated[int, typer.Option(help="ACP version to ask for (1 or 2).")] = 2,
    resumes: Annotated[int, typer.Option(help="Replaying resumes (v2) or loads (v1).")] = 1,
    session: Annotated[str | None, typer.Option(help="Resume this session (else new).")] = None,
    cwd: Annotated[str | None, typer.Option(help="cwd sent to the agent.")] = None,
    prompt: Annotated[str | None, typer.Option(help="Send this prompt first.")] = None,
    cursor: Annotated[str, typer.Option(help="v2 replayFrom type; `none` omits it.")] = "start",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each response.")] = 60.0,
    grace: Annotated[float, typer.Option(help="Seconds between closing stdin and SIGTERM.")] = 5.0,
    save: Annotated[Path | None, typer.Option(help="Save every byte received.")] = None,
    save_sent: Annotated[Path | None, typer.Option(help="Save every byte sent.")] = None,
    summary: Annotated[bool, typer.Option(help="Print one line per request.")] = False,
) -> None:
    """Drive an agent: initialize, session/new (or --session), prompt, N resumes or loads."""
    import os

    from acp_trace.demo import client

    opts = client.ClientOptions(
        command=tuple(command),
        protocol=protocol,
        resumes=resumes,
        session=session,
        cwd=cwd or os.getcwd(),
        prompt=prompt,
        cursor=cursor,
        timeout=timeout,
        grace=grace,
        save=save,
        save_sent=save_sent,
    )
    result = client.run_client(opts)
    if summary:
        typer.echo(client.format_result(result), nl=False)
    if not result.finished:
        sys.stderr.write(f"acp-trace: demo-client: {result.problem}\n")
        raise typer.Exit(1)
