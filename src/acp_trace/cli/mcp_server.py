"""`acp-trace mcp [TRACE|DIR]...`: the traces as a read-only MCP server on stdio, for a
coding agent (Claude Code, Zed, any MCP host) to query. Needs the `mcp` extra."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from acp_trace.cli.app import (
    Deadline,
    FrameLimit,
    From,
    MarkerMeta,
    QuietCap,
    QuietWindow,
    app,
    weight_of,
)
from acp_trace.errors import InputError, UsageError

EXTRA = "pip install -e '.[mcp]' in the acp-trace clone"


@app.command()
def mcp(
    traces: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TRACE|DIR",
            help="Trace files, directories or globs (default: the folder `record` writes to: "
            "$ACP_TRACE_DIR, else $XDG_STATE_HOME/acp-trace/traces).",
        ),
    ] = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
    frame_limit: FrameLimit = None,
    deadline: Deadline = None,
    quiet_window: QuietWindow = None,
    quiet_cap: QuietCap = None,
) -> None:
    """Serve the traces to a coding agent over MCP (stdio, read-only): replays, explain_replay,
    findings, latency, diff, timeline, charts.

    Add it to a host: claude mcp add acp-trace -- acp-trace mcp DIR (see the README). The
    folder is read again when it changes; nothing is written. Needs the extra: pip install -e
    '.[mcp]' in the acp-trace clone.
    """
    try:
        from acp_trace.mcpserver.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "pydantic"):
            raise
        raise UsageError(f"mcp needs the MCP SDK, which is not installed: {EXTRA}") from exc
    from acp_trace.mcpserver.store import Store

    weight = weight_of(frame_limit, deadline, quiet_window, quiet_cap)

    paths, hint = list(traces or []), ""
    for path in paths:  # a path that names nothing is an error now (an empty folder is not)
        if not glob.has_magic(path) and not Path(path).exists():
            raise InputError(f"{path}: no such file or directory")
    if not paths:
        from acp_trace.record.trace_file import TRACE_DIR_ENV, default_trace_dir

        folder = os.environ.get(TRACE_DIR_ENV) or str(default_trace_dir(os.environ))
        paths = [folder]  # may not exist yet: each call says so until a trace is recorded
        hint = " (the folder acp-trace record writes to; record a session into it first)"
    store = Store(paths, marker_meta=marker_meta, fmt=source_format, hint=hint, weight=weight)
    serve(store, stopped)


def stopped(signum: int) -> NoReturn:
    """SIGTERM, SIGHUP or SIGINT while serving: one line and 128+N, at once (nothing to
    clean up: the server wrote nothing and started no process)."""
    from acp_trace.cli.app import _fail, _leave, stopped_by

    _leave(_fail(stopped_by(signum), 128 + signum))
