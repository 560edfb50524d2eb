"""`acp-trace diff BASE... -- NEW...`: did the replay gap or the latency get better or worse."""

from __future__ import annotations

from typing import Annotated

import typer

from acp_trace.cli.app import From, MarkerMeta, analyze_paths, app
from acp_trace.cli.numbers import Number
from acp_trace.cli.terminal import emit, width

FORMATS = ("text", "json", "markdown")


@app.command(context_settings={"allow_interspersed_args": False})
def diff(
    traces: Annotated[
        list[str],
        typer.Argument(
            help="BASE traces, then `--`, then NEW traces (files, directories, globs).",
            metavar="BASE... -- NEW...",
        ),
    ],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text, json or markdown (a PR comment).")
    ] = "text",
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            help="How large a change must be to flag: a share of BASE (20%) and/or a duration "
            "(50ms); repeatable, every one given must be exceeded. Default 20%.",
        ),
    ] = None,
    confidence: Annotated[
        float,
        typer.Option(parser=Number(0.5, 0.999), help="Confidence of the bootstrap interval."),
    ] = 0.95,
    min_samples: Annotated[
        int, typer.Option(min=2, help="Fewer replays or requests on a side: too few to judge.")
    ] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resampling.")] = 0,
    plot: Annotated[
        str | None,
        typer.Option(metavar="FILE", help="Also draw the two gap ECDFs per agent (.png or .svg)."),
    ] = None,
    marker_meta: MarkerMeta = None,
    source_format: From = None,
) -> None:
    """Compare two sets of traces: replay gap and request latency (p50, p90) per agent version
    and method with a bootstrap interval, outcome flips, findings new and gone; exit 1 on a
    regression (options go before BASE)."""
    from acp_trace.analysis.diff import DiffOptions, parse_threshold
    from acp_trace.analysis.diff import diff as compare
    from acp_trace.errors import UsageError
    from acp_trace.render.report.diff import format_diff

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    base_paths, new_paths = split_sides(traces)
    pct: float | None = 20.0
    ms: float | None = None
    if threshold:
        pct = None
        for text in threshold:
            try:
                p, m = parse_threshold(text)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
            pct, ms = p if p is not None else pct, m if m is not None else ms
    options = DiffOptions(
        threshold_pct=pct,
        threshold_ms=ms,
        confidence=confidence,
        min_samples=min_samples,
        seed=seed,
    )
    if plot is not None:
        plot_target(plot, [*base_paths, *new_paths])
    base = analyze_paths(base_paths, marker_meta, source_format)
    new = analyze_paths(new_paths, marker_meta, source_format)
    result = compare(base, new, options)
    emit(format_diff(result, fmt, width()), "json" if fmt == "json" else "text")
    if plot is not None:
        from acp_trace.render import plots
        from acp_trace.render.plots.diff import diff_figure

        plots.save(diff_figure(base.replays, new.replays), plot)
    if result.regressions:
        raise typer.Exit(1)


def plot_target(plot: str, traces: list[str]) -> None:
    """Check `--plot FILE` before anything is read: a PNG or SVG name (or a stream other
    than stdout, which carries the comparison), no input."""
    from acp_trace.cli.targets import binary_output, file_output
    from acp_trace.errors import UsageError
    from acp_trace.files import to_stdout
    from acp_trace.render.plots import chart_format

    if to_stdout(plot):
        raise UsageError(f"--plot {plot}: stdout carries the comparison; name a file")
    if chart_format(plot, "--plot") == "png":
        binary_output(plot, "a PNG")
    file_output(plot, traces)


def split_sides(traces: list[str]) -> tuple[list[str], list[str]]:
    """BASE and NEW from `BASE... -- NEW...`: UsageError without both, or with an option after
    the traces (options go before BASE)."""
    from acp_trace.errors import UsageError

    if "--" not in traces:
        raise UsageError("diff: expected BASE... -- NEW... (the two sides split by `--`)")
    cut = traces.index("--")
    base, new = traces[:cut], traces[cut + 1 :]
    stray = [t for t in new if t.startswith("-") and t != "-"]
    if stray:
        raise UsageError(f"diff: {stray[0]} after the traces; put options before BASE")
    if not base or not new:
        side = "BASE" if not base else "NEW"
        raise UsageError(f"diff: no {side} traces (expected BASE... -- NEW...)")
    return base, new
