"""The bug-report bundle: DIR/report.md (paste into a GitHub issue), DIR/report.html (the same
with every row, one self-contained file), DIR/replays.csv (every replay) and the charts beside
them (gap.png, replay.png, weight.png, latency.png).

report.md leads with the key facts (agents, outcomes, the gap per agent version) and ends with
the per-replay table, capped so the file stays under `MARKDOWN_LIMIT` characters whatever the
input (GitHub refuses an issue body over 65,536). The report names agents, versions, sessions,
methods, outcomes, timings and findings; it never includes message contents. All of it goes
through `document`, which escapes trace text. report.md, report.html and replays.csv hold
trace-derived text (session ids, paths): they are written private (0600, in a 0700 directory
when it is new); the charts hold no contents and follow the umask. A chart that cannot be
drawn (matplotlib refuses what a hostile trace makes of it) never takes the report down: it
is left out and the report says which chart is missing and why (`ReportFiles.failed`).

The folder is written whole or not at all: built in a private folder beside `DIR` and
renamed into place (`acp_trace.owned.building`), replacing a folder an earlier report wrote;
an error, Ctrl-C or SIGTERM on the way removes the unfinished folder and leaves `DIR` as it
was.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acp_trace.files import write_file
from acp_trace.owned import building
from acp_trace.render import plots
from acp_trace.render.report.context import HTML, MARKDOWN, context
from acp_trace.render.report.document import Block, Image, Paragraph, to_html, to_markdown
from acp_trace.render.report.facts import TITLE
from acp_trace.render.report.formats import frame
from acp_trace.render.report.sections import build
from acp_trace.render.report.sections import replays_csv_frame as _csv_frame

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

CHARTS = {
    "gap.png": "gap",
    "replay.png": "replay",
    "weight.png": "weight",
    "latency.png": "latency",
}
MARKDOWN_LIMIT = 60_000  # characters; GitHub's limit for an issue body is 65,536


@dataclass(frozen=True)
class ReportFiles:
    """Where a report went."""

    directory: Path
    markdown: Path
    html: Path
    csv: Path
    charts: list[Path]
    failed: dict[str, str] = field(default_factory=dict)  # chart file -> why it is missing


def report(
    paths: Paths,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    marker_meta: str | None = None,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    redact_content: bool = True,
) -> ReportFiles:
    """Read traces and write the report bundle into `out_dir`."""
    from acp_trace.analysis.front import analyze

    a = analyze(paths, marker_meta=marker_meta, fmt=fmt, progress=progress)
    return write_report(a, out_dir, command=command, redact_content=redact_content)


def write_report(
    a: Analysis,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    redact_content: bool = True,
) -> ReportFiles:
    """Write report.md, report.html, replays.csv and the charts of an analysis into `out_dir`;
    credentials in free text are replaced first (export.scrubbed) unless `redact_content`
    is false."""
    if redact_content:
        from acp_trace.render.export import scrubbed

        a = scrubbed(a)
    out = Path(out_dir)
    with building(out_dir, "report") as temp:
        charts, failed = draw_charts(a, temp)
        write_file(temp / "report.md", markdown_report(a, command, failed))
        images = {path.name: path.read_bytes() for path in charts}
        page = to_html(missing_charts(build_blocks(a, command, html=True), failed), images, TITLE)
        write_file(temp / "report.html", page)
        table = frame(_csv_frame(context(a, HTML)), "csv", spreadsheet=True)  # opened by people
        write_file(temp / "replays.csv", table)
    drawn = [out / path.name for path in charts]
    return ReportFiles(
        out, out / "report.md", out / "report.html", out / "replays.csv", drawn, failed
    )


def draw_charts(a: Analysis, out: Path) -> tuple[list[Path], dict[str, str]]:
    """Draw and save each chart; a chart that fails is left out (its older file removed),
    with why: the exception's type and first line."""
    charts: list[Path] = []
    failed: dict[str, str] = {}
    for name, kind in CHARTS.items():
        try:
            charts.append(plots.save(plots.figure(a, kind), out / name, "report"))
        except Exception as exc:  # any failure of matplotlib on any input
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            failed[name] = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
            stale = out / name
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
    return charts, failed


def missing_charts(blocks: list[Block], failed: dict[str, str]) -> list[Block]:
    """The blocks with each chart that could not be drawn replaced by a line saying so."""
    return [
        Paragraph(f"Chart {b.alt} ({b.file}) could not be drawn: {failed[b.file]}.")
        if isinstance(b, Image) and b.file in failed
        else b
        for b in blocks
    ]


def build_blocks(a: Analysis, command: str | None = None, *, html: bool = False) -> list[Block]:
    """The report as document blocks (plain text; the renderers escape it): capped for
    Markdown, every row for HTML."""
    return build(context(a, HTML if html else MARKDOWN), command)


def markdown_report(
    a: Analysis, command: str | None = None, failed: dict[str, str] | None = None
) -> str:
    """report.md: the Markdown blocks, with fewer rows per table until it fits
    `MARKDOWN_LIMIT` characters (the caps alone keep it there for ordinary input); the
    charts in `failed` named as not drawn."""
    limits = MARKDOWN
    while True:
        text = to_markdown(missing_charts(build(context(a, limits), command), failed or {}))
        if len(text) <= MARKDOWN_LIMIT or limits.scaled(0.5) == limits:
            return text
        limits = limits.scaled(0.5)
