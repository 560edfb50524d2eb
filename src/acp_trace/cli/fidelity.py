"""`acp-trace fidelity`: is the replay the session? Each replay against its source, message by
message (rules.md "Replay fidelity")."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from acp_trace.cli.app import From, MarkerMeta, Traces, Workers, analyze_paths, app, exit_if_failed
from acp_trace.cli.terminal import emit


@app.command()
def fidelity(
    traces: Traces,
    fmt: Annotated[
        Literal["text", "json"], typer.Option("--format", "-f", help="Output format.")
    ] = "text",
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help="Only this session's replays.")
    ] = None,
    request_id: Annotated[
        str | None,
        typer.Option("--request-id", metavar="ID", help="Only the replay of this request id."),
    ] = None,
    differing: Annotated[
        bool, typer.Option("--differing", help="Only the replays with a difference.")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", metavar="N", min=1, help="text: at most N differences per replay."),
    ] = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
    workers: Workers = 1,
) -> None:
    """Each replay against the session it replays: missing, extra, repeated, re-identified,
    reordered and cut messages.

    The source is the session as the traces recorded it: its latest earlier replay and the
    prompt turns since, looked for over every trace given, in recording order.
    """
    from acp_trace.render.fidelity import fidelity_data, format_fidelity
    from acp_trace.render.report.formats import to_json

    a = analyze_paths(traces, marker_meta, source_format, workers)
    data = fidelity_data(a, session=session, request_id=request_id)
    if differing:
        data = [r for r in data if r["differences"]]
    if fmt == "json":
        emit(to_json(data), "json")
    else:
        emit(format_fidelity(data, limit=limit))
    exit_if_failed(a)
