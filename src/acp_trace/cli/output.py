"""The commands that write files: report, plot, export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import (
    From,
    MarkerMeta,
    Traces,
    app,
    progress_bar,
)


@app.command()
def report(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="The report's directory.")],
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Write a bug report: report.md for an issue, report.html, and the charts beside them."""
    import shlex

    from acp_trace.render.report.bundle import report as write_report

    command = shlex.join(["acp-trace", *sys.argv[1:]])
    files = write_report(
        traces,
        output,
        command=command,
        marker_meta=marker_meta,
        fmt=source_format,
        progress=progress_bar("reading"),
    )
    typer.echo(f"wrote {files.markdown}, {files.html} and {len(files.charts)} charts")


@app.command()
def plot(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="FILE.png or FILE.svg.")],
    kind: Annotated[str, typer.Option("--kind", help="gap, replay or latency.")] = "gap",
    session: Annotated[str | None, typer.Option(help="replay: this session's replay.")] = None,
    request: Annotated[str | None, typer.Option(help="replay: the request with this id.")] = None,
    trace: Annotated[str | None, typer.Option(help="replay: in this trace (path or name).")] = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Draw a chart: the replay gap distribution, one replay's timeline, or latency."""
    from acp_trace.render.plots import plot as draw

    path = draw(
        traces,
        output,
        kind,
        session=session,
        request=request,
        trace=trace,
        marker_meta=marker_meta,
        fmt=source_format,
        progress=progress_bar("reading"),
    )
    typer.echo(f"wrote {path}")


@app.command()
def export(
    traces: Traces,
    output: Annotated[Path, typer.Option("-o", "--output", help="A directory, or FILE.json.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="parquet, csv or perfetto.")],
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Export records, replays and findings (Parquet, CSV) or a Perfetto trace (JSON)."""
    from acp_trace.render.export import export as write_export

    written = write_export(
        traces,
        fmt,
        output,
        marker_meta=marker_meta,
        source_format=source_format,
        progress=progress_bar("reading"),
    )
    typer.echo(f"wrote {', '.join(str(p) for p in written)}")
