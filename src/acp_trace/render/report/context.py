"""What every section of the report shares: the caps (`Limits`), the analysis with short
trace names (`Context`), table cells that stay short, and the line a cap leaves.

Every table of report.md is capped, and every cell too, so the Markdown stays under GitHub's
limit for an issue whatever the input; what a cap leaves out is counted in a line below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import polars as pl

from acp_trace.quantities import count, ms
from acp_trace.render.plots._common import plural
from acp_trace.render.report.document import Block, Paragraph, Table
from acp_trace.trace.reader import skipped_inputs

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis


@dataclass(frozen=True)
class Limits:
    """Rows per table and characters per cell; None: no cap."""

    replays: int | None = None
    agents: int | None = None
    findings: int | None = None
    latency: int | None = None
    skipped: int | None = None
    cell: int | None = None
    full: bool = False  # add the tables only HTML has room for (every finding)

    def scaled(self, factor: float) -> Limits:
        """The same caps, `factor` times as many rows (a report that must shrink)."""

        def part(n: int | None) -> int | None:
            return None if n is None else max(1, int(n * factor))

        return Limits(
            part(self.replays),
            part(self.agents),
            part(self.findings),
            part(self.latency),
            part(self.skipped),
            self.cell,
            self.full,
        )


MARKDOWN = Limits(replays=25, agents=20, findings=30, latency=20, skipped=10, cell=72)
HTML = Limits(
    replays=20_000, agents=1_000, findings=20_000, latency=1_000, skipped=1_000, full=True
)


@dataclass
class Context:
    """An analysis with what every section needs: short trace names, the caps."""

    a: Analysis
    limits: Limits
    names: dict[str, str]
    skipped: pl.DataFrame

    def trace(self, value: str | None) -> str:
        return "-" if value is None else self.names.get(value, value)

    def cell(self, value: Any, wide: bool = False) -> str:
        """A table cell: `-` for missing, floats to the data's precision, long text cut in
        the middle (both ends of an id tell it apart; a `wide` cell, a sentence, twice as
        long)."""
        if value is None:
            return "-"
        if isinstance(value, float):
            return ms(value)  # as the terminal's tables write it
        if isinstance(value, int) and not isinstance(value, bool):
            return count(value)  # as the text and the charts write them
        text = str(value)
        limit = self.limits.cell and self.limits.cell * (2 if wide else 1)
        if limit is not None and len(text) > limit:
            head = (limit - 1) // 2
            text = text[:head] + "…" + text[len(text) - (limit - 1 - head) :]
        return text

    def table(
        self, columns: list[str], rows: list[list[Any]], numeric: set[int], wide: int = -1
    ) -> Table:
        """A table of cells; column `wide` holds sentences (messages). A `seq` is a position,
        written as the messages write it (no thousands separator)."""
        plain = {i for i, name in enumerate(columns) if name == "seq"}
        cells = [
            [str(v) if i in plain and v is not None else self.cell(v, i == wide)
             for i, v in enumerate(row)]
            for row in rows
        ]  # fmt: skip
        return Table(columns, cells, frozenset(numeric))


def context(a: Analysis, limits: Limits) -> Context:
    skipped = skipped_inputs(a.records)
    traces = a.traces()["trace"].to_list() if a.records.height else []
    return Context(a, limits, relative_names(traces), skipped)


def relative_names(traces: list[str]) -> dict[str, str]:
    """Each trace named relative to the folder all of them share (`dir/a.jsonl`, `b.jsonl#2`),
    never by an absolute path: a report is handed to strangers."""
    files = {t: os.path.abspath(t.split("#", 1)[0]) for t in traces}
    try:
        root = os.path.commonpath([os.path.dirname(f) for f in files.values()]) if files else ""
    except ValueError:  # on different drives
        root = ""
    out = {}
    for trace, file in files.items():
        rest = trace[len(trace.split("#", 1)[0]) :]
        shown = os.path.relpath(file, root) if root else os.path.basename(file)
        out[trace] = PurePath(shown).as_posix() + rest
    return out


def capped(
    ctx: Context, df: pl.DataFrame, limit: int | None, what: str
) -> tuple[pl.DataFrame, list[Block]]:
    """At most `limit` rows, and a line saying how many were left out and where they are."""
    if limit is None or df.height <= limit:
        return df, []
    more = df.height - limit
    where = (
        "every row is in replays.csv" if ctx.limits.full and what == "replay row" else WHERE[what]
    )
    return df.head(limit), [Paragraph(f"{count(more)} more {plural(more, what)}: {where}.")]


WHERE = {  # where the rows a cap leaves out are
    "agent row": "see acp-trace replays",
    "rule": "see acp-trace check",
    "finding": "see acp-trace check",
    "latency row": "see acp-trace latency --by agent",
    "skipped file": "acp-trace summary lists them all",
    "lacking recording": "acp-trace summary says what each lacks",
    "replay row": "every row is in report.html and replays.csv beside this report",
}


def shown_command(args: list[str], home: str | None = None) -> str:
    """The command line a report shows (shell-quoted): an argument that is an absolute path
    under the home directory as `~/...`, any other absolute path by its last part only
    (`…/traces`), the rest as typed; a report is handed to strangers. `home`: $HOME."""
    import shlex

    home = os.path.expanduser("~") if home is None else home
    shown = []
    for arg in args:
        if os.path.isabs(arg):
            path = os.path.normpath(arg)
            root = home.rstrip("/")
            if root and (path == root or path.startswith(root + "/")):
                rest = path[len(root) + 1 :]
                shown.append("~/" + shlex.quote(rest) if rest else "~")
                continue
            arg = "…/" + os.path.basename(path) + ("/" if arg.endswith("/") else "")
        shown.append(shlex.quote(arg))
    return " ".join(shown)
