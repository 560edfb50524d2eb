"""`acp-trace record`: the tap between an editor and an agent. It imports no analyzer module."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import app


@app.command(context_settings={"allow_interspersed_args": False})
def record(
    command: Annotated[
        list[str],
        typer.Argument(help="The agent and its arguments, after `--`.", metavar="AGENT..."),
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the trace to this file.")
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Write a new trace named TIMESTAMP-AGENT.jsonl into this directory "
            "(default: $ACP_TRACE_DIR, else $XDG_STATE_HOME/acp-trace/traces).",
        ),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Record secrets (MCP env/headers, credentials).")
    ] = False,
    redact_stderr: Annotated[
        list[str] | None,
        typer.Option(
            "--redact-stderr",
            metavar="PATTERN",
            help="Replace matches of this regex in recorded stderr lines (repeatable).",
        ),
    ] = None,
    max_record_bytes: Annotated[
        int | None,
        typer.Option(
            min=0, help="Cut the recorded copy of longer lines (forwarding is never cut)."
        ),
    ] = None,
    grace: Annotated[
        float,
        typer.Option(
            min=0.0, help="Seconds the agent may outlive the client's stdin (then TERM, KILL)."
        ),
    ] = 3.0,
    queue_bytes: Annotated[
        int,
        typer.Option(
            min=1, help="Bytes of lines waiting for a slow disk before records are dropped."
        ),
    ] = 256 << 20,
) -> None:
    """Run an agent behind a tap that forwards every byte and records a trace: -- AGENT [ARGS...]."""
    from acp_trace.record.options import RecordOptions
    from acp_trace.record.tap import record as run_recorder

    def warn(message: str) -> None:
        sys.stderr.write(f"acp-trace: {message}\n")
        sys.stderr.flush()

    options = RecordOptions(
        command=command,
        output=output,
        directory=directory,
        redact=not no_redact,
        redact_stderr=tuple(redact_stderr or ()),
        max_record_bytes=max_record_bytes,
        grace=grace,
        queue_bytes=queue_bytes,
    )
    result = run_recorder(options, warn=warn)
    if result.dropped and result.write_error is None:
        warn(f"{result.trace}: {result.dropped} records were dropped (the disk was too slow)")
    raise typer.Exit(result.exit_code)
