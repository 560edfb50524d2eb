"""`acp-trace record`: the tap between an editor and an agent. It imports no analyzer module;
`acp-trace record ... -- AGENT` usually takes the fast path of record_fast.py instead, which
means the same (this is its help and its errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import app
from acp_trace.record.options import DEFAULT_GRACE, DEFAULT_MAX_RECORD_BYTES, DEFAULT_QUEUE_BYTES


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
    no_redact_content: Annotated[
        bool,
        typer.Option(
            "--no-redact-content",
            help="Keep credentials found in free text (API keys, tokens, passwords in prompts,"
            " file contents, stderr); the ACP secret fields are still redacted.",
        ),
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
        int,
        typer.Option(
            min=0,
            help="Record at most this many bytes of a line (the rest is counted, marked"
            " truncated; forwarding is never cut). Bounds the recorder's memory.",
        ),
    ] = DEFAULT_MAX_RECORD_BYTES,
    grace: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds the agent may outlive the client's stdin or a SIGTERM (then TERM,"
            " KILL); also how long a stuck trace may hold up the exit.",
        ),
    ] = DEFAULT_GRACE,
    queue_bytes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Bytes of traffic that may wait in memory for the trace writer (a 256 MiB"
            " ring and the writer's backlog) before records are dropped (and counted).",
        ),
    ] = DEFAULT_QUEUE_BYTES,
) -> None:
    """Run an agent behind a tap that forwards every byte and records a trace: -- AGENT [ARGS...]."""
    from acp_trace.cli.record_fast import run
    from acp_trace.record.options import RecordOptions

    options = RecordOptions(
        command=command,
        output=output,
        directory=directory,
        redact=not no_redact,
        redact_stderr=tuple(redact_stderr or ()),
        redact_content=not no_redact_content,
        max_record_bytes=max_record_bytes,
        grace=grace,
        queue_bytes=queue_bytes,
    )
    raise typer.Exit(run(options))
