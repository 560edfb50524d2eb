"""The bug-report bundle: DIR/report.md (paste into a GitHub issue), DIR/report.html (the same
with every row, one self-contained file), DIR/replays.csv (every replay) and the charts beside
them (gap.png, replay.png, latency.png).

report.md leads with the key facts (agents, outcomes, the gap per agent version) and ends with
the per-replay table, capped so the file stays under `MARKDOWN_LIMIT` characters whatever the
input (GitHub refuses an issue body over 65,536). The report names agents, versions, sessions,
methods, outcomes, timings and findings; it never includes message contents. All of it goes
through `document`, which escapes trace text. report.md, report.html and replays.csv hold
trace-derived text (session ids, paths): they are written private (0600, in a 0700 directory
when it is new); the charts hold no contents and follow the umask.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_trace.files import output_dir, write_file
from acp_trace.render import plots
from acp_trace.render.report.context import HTML, MARKDOWN, context
from acp_trace.render.report.document import Block, to_html, to_markdown
from acp_trace.render.report.facts import TITLE
from acp_trace.render.report.formats import frame
from acp_trace.render.report.sections import build
from acp_trace.render.report.sections import replays_csv_frame as _csv_frame

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis, Paths

CHARTS = {"gap.png": "gap", "replay.png": "replay", "latency.png": "latency"}
MARKDOWN_LIMIT = 60_000  # characters; GitHub's limit for an issue body is 65,536


@dataclass(frozen=True)
class ReportFiles:
    """Where a report went."""

    directory: Path
    markdown: Path
    html: Path
    csv: Path
    charts: list[Path]


def report(
    paths: Paths,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    marker_meta: str | None = None,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReportFiles:
    """Read traces and write the report bundle into `out_dir`."""
    from acp_trace.analysis.front import analyze

    a = analyze(paths, marker_meta=marker_meta, fmt=fmt, progress=progress)
    return write_report(a, out_dir, command=command)


def write_report(
    a: Analysis, out_dir: str | os.PathLike[str], *, command: str | None = None
) -> ReportFiles:
    """Write report.md, report.html, replays.csv and the charts of an analysis into `out_dir`."""
    out = output_dir(out_dir)
    charts = [plots.save(plots.figure(a, kind), out / name) for name, kind in CHARTS.items()]
    markdown = write_file(out / "report.md", markdown_report(a, command))
    images = {path.name: path.read_bytes() for path in charts}
    page = to_html(build_blocks(a, command, html=True), images, TITLE)
    html = write_file(out / "report.html", page)
    table = frame(_csv_frame(context(a, HTML)), "csv", spreadsheet=True)  # opened by people
    csv = write_file(out / "replays.csv", table)
    return ReportFiles(out, markdown, html, csv, charts)


def build_blocks(a: Analysis, command: str | None = None, *, html: bool = False) -> list[Block]:
    """The report as document blocks (plain text; the renderers escape it): capped for
    Markdown, every row for HTML."""
    return build(context(a, HTML if html else MARKDOWN), command)


def markdown_report(a: Analysis, command: str | None = None) -> str:
    """report.md: the Markdown blocks, with fewer rows per table until it fits
    `MARKDOWN_LIMIT` characters (the caps alone keep it there for ordinary input)."""
    limits = MARKDOWN
    while True:
        text = to_markdown(build(context(a, limits), command))
        if len(text) <= MARKDOWN_LIMIT or limits.scaled(0.5) == limits:
            return text
        limits = limits.scaled(0.5)
