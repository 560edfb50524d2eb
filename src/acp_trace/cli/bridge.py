"""`acp-trace bridge URL`: a remote agent (WebSocket or Streamable HTTP) as a stdio agent."""

from __future__ import annotations

from typing import Annotated

import typer

from acp_trace.cli.app import app


@app.command()
def bridge(
    url: Annotated[
        str,
        typer.Argument(
            help="The remote agent's URL: ws://, wss:// (WebSocket), http://, https:// "
            "(Streamable HTTP).",
            metavar="URL",
        ),
    ],
) -> None:
    """Speak ACP on stdin/stdout to a remote agent at URL: what stdio tools start as an agent
    (drive, the pytest plugin, record -- ...) then reaches it. Needs the `remote` extra."""
    from acp_trace.remote.options import parse_upstream

    parse_upstream(url)  # a bad URL: one line, exit 2, before anything starts
    from acp_trace.remote.bridge import bridge as run

    raise typer.Exit(run(url))
