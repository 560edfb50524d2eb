"""`acp-trace record`: the tap between an editor and an agent. It imports no analyzer module;
`acp-trace record ... -- AGENT` usually takes the fast path of record_fast.py instead, which
means the same (this is its help and its errors). `record --listen HOST:PORT --upstream URL`
is the remote recorder (acp_trace.remote): a reverse proxy to an agent served over
Streamable HTTP or WebSocket."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import app
from acp_trace.errors import UsageError
from acp_trace.record.options import DEFAULT_GRACE, DEFAULT_MAX_RECORD_BYTES, DEFAULT_QUEUE_BYTES


@app.command(context_settings={"allow_interspersed_args": False})
def record(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The agent and its arguments, after `--`.", metavar="AGENT"),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            help="Record a remote agent: listen here (with --upstream) as a reverse proxy;"
            " point the editor at this address with the agent's path.",
        ),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            metavar="URL",
            help="The remote agent's URL (http://, https://, ws:// or wss://), with --listen.",
        ),
    ] = None,
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
    """Run an agent behind a tap that forwards every byte and records a trace: -- AGENT [ARGS...];
    or record a remote agent: --listen HOST:PORT --upstream URL."""
    from acp_trace.cli.record_fast import run
    from acp_trace.record.options import RecordOptions

    if listen is not None or upstream is not None:
        if command or redact_stderr:
            what = (
                "an agent command" if command else "--redact-stderr (a remote agent has no stderr)"
            )
            raise UsageError(
                f"--listen/--upstream record a remote agent: {what} does not go with them"
            )
        raise typer.Exit(
            _remote(listen, upstream, output, directory, not no_redact, not no_redact_content,
                    max_record_bytes, grace, queue_bytes)
        )  # fmt: skip
    if not command:
        raise UsageError("record needs an agent (-- AGENT [ARGS...]) or --listen and --upstream")

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


def _remote(
    listen: str | None,
    upstream: str | None,
    output: Path | None,
    directory: Path | None,
    redact: bool,
    redact_content: bool,
    max_record_bytes: int,
    grace: float,
    queue_bytes: int,
) -> int:
    """Check the remote recorder's options, then record until Ctrl-C or SIGTERM; 0."""
    if listen is None or upstream is None:
        raise UsageError("a remote recording needs both --listen HOST:PORT and --upstream URL")
    from acp_trace.cli.terminal import warn
    from acp_trace.remote.options import RemoteOptions, parse_listen, parse_upstream

    options = RemoteOptions(
        listen=parse_listen(listen),
        upstream=parse_upstream(upstream),
        output=None if output is None else str(output),
        directory=None if directory is None else str(directory),
        redact=redact,
        redact_content=redact_content,
        max_record_bytes=max_record_bytes,
        queue_bytes=queue_bytes,
        grace=grace,
    )
    from acp_trace.remote.run import record_remote

    def ready(host: str, port: int) -> None:
        warn(f"recording {options.upstream.url} at {host}:{port} (Ctrl-C ends it)")
        sys.stderr.flush()

    result = record_remote(options, ready=ready, warn=warn)
    if result.dropped:
        warn(f"{result.trace}: {result.dropped} messages were dropped (the writer could not keep up;"
             " --queue-bytes holds more)")  # fmt: skip
    traces = ", ".join(result.traces)
    plural = "s, one per ACP connection" if len(result.traces) > 1 else ""
    warn(f"trace{plural}: {traces} ({result.records} records)")
    return 0
