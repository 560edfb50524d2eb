"""The commands that write files: report, plot, export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import (
    From,
    MarkerMeta,
    Scheduler,
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
    fmt: Annotated[str, typer.Option("--format", "-f", help="parquet, csv, perfetto or otlp.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="A directory, or FILE.json.")
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            help="parquet: append to this hive-partitioned dataset (docs/dataset.md) instead "
            "of writing -o; traces already in it are not written again.",
        ),
    ] = None,
    scheduler: Scheduler = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Export records, replays and findings (Parquet, CSV, a Parquet dataset), a Perfetto
    trace or OpenTelemetry spans (OTLP/JSON)."""
    from acp_trace.errors import UsageError
    from acp_trace.render.export import export as write_export

    if dataset is not None:
        if fmt != "parquet" or output is not None:
            raise UsageError("--dataset DIR goes with --format parquet and without -o")
        append_dataset(traces, dataset, scheduler, marker_meta, source_format)
        return
    if output is None:
        raise UsageError(f"--format {fmt} needs -o (a directory, or FILE.json)")
    if scheduler is not None:
        raise UsageError("--scheduler goes with --dataset (workers write their partitions)")
    written = write_export(
        traces,
        fmt,
        output,
        marker_meta=marker_meta,
        source_format=source_format,
        progress=progress_bar("reading"),
    )
    typer.echo(f"wrote {', '.join(str(p) for p in written)}")


def append_dataset(
    traces: list[str],
    dataset: Path,
    scheduler: str | None,
    marker_meta: str | None,
    source_format: str | None,
) -> None:
    """`export --format parquet --dataset DIR`: here, or by the workers of a Dask cluster."""
    from acp_trace.fleet import run

    result = run(
        traces,
        scheduler=scheduler,
        workers=None if scheduler else 1,
        partitions=None if scheduler else 1,
        marker_meta=marker_meta,
        fmt=source_format,
        dataset=dataset,
    )
    for trace, problem in result.skipped.rows():
        sys.stderr.write(f"acp-trace: skipped {trace}: {problem}\n")
    for trace, problem in result.failed.rows():
        sys.stderr.write(f"acp-trace: could not analyze {trace}: {problem}\n")
    w = result.written
    typer.echo(
        f"{dataset}: {w.get('traces', 0)} new traces ({w.get('known', 0)} already in the "
        f"dataset): {w.get('records', 0)} records, {w.get('replays', 0)} replays, "
        f"{w.get('findings', 0)} findings, {w.get('turns', 0)} turns"
    )
    if result.failed.height:
        raise typer.Exit(2)
