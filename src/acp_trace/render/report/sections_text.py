"""A table in sections for a terminal: one small table per agent version, trace or method, under
a line that names it, so that no name column takes the room of the numbers (`acp-trace
latency --by agent` at 80 columns: the method whole, the agent named once above its rows)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from acp_trace.render.report.tables import (
    FOLD_LEAST,
    REPLAY_LABELS,
    cell,
    narrow,
    shorten,
    table,
)


def sectioned(
    df: pl.DataFrame,
    keys: Sequence[str],
    *,
    fold: Sequence[str] = (),
    width: int | None = None,
) -> RenderableType:
    """`df` as a table per distinct value of `keys` (in the order of the rows), each under a
    line with the values (`agent 1.2.0:`, shortened to `width` with an ellipsis); without keys
    one table. The other columns in each; ids and names shortened as `table` does."""
    if not keys:
        return table(df, fold=fold, width=width, labels=REPLAY_LABELS)
    rest = [c for c in df.columns if c not in keys]
    parts: list[RenderableType] = []
    for number, (values, part) in enumerate(df.group_by(list(keys), maintain_order=True)):
        if number:
            parts.append(Text(""))
        parts.append(Text(_title([cell(v) for v in values], width), no_wrap=True))
        parts.append(table(part.select(rest), fold=fold, width=width, labels=REPLAY_LABELS))
    return Group(*parts)


def _title(values: list[str], width: int | None) -> str:
    """`agent 1.2.0:`: the values of a section's keys; to fit `width`, the longest value is
    shortened with an ellipsis (the others stay whole), then the line if still too long."""
    line = " ".join(values) + ":"
    if width is None or cell_len(line) <= width:
        return line
    longest = max(range(len(values)), key=lambda i: cell_len(values[i]))
    room = cell_len(values[longest]) - (cell_len(line) - width)
    values[longest] = shorten(values[longest], max(FOLD_LEAST, room))
    return shorten(" ".join(values) + ":", width)


# What a person needs least in a latency table, left out first (in this order) on a terminal
# too narrow to show the agents' names (the rows' identity) readable.
LATENCY_DROPS = ("p99_ms", "p90_ms")


def narrow_latency(
    df: pl.DataFrame, keys: Sequence[str], width: int | None
) -> tuple[pl.DataFrame, list[str]]:
    """A latency table without the columns (LATENCY_DROPS) that leave its names no room at
    `width`, and those left out."""
    if width is None:
        return df, []
    rest = df.drop(list(keys))
    _shown, dropped = narrow(rest, width, ("agent", "trace", "method", "phase"), LATENCY_DROPS)
    return df.drop(dropped), dropped


def latency_sections(df: pl.DataFrame, by: str) -> tuple[pl.DataFrame, list[str]]:
    """The columns and sections a latency table (requests or prompt-turn phases) is shown in:
    `--by agent` a section per agent version, `--by trace` per trace, `--by method` per method
    when several agent versions answered (else the agent columns are left out: one agent)."""
    agents: list[str] = [c for c in ("agent", "agent_version") if c in df.columns]
    if by == "trace":
        return df, ["trace"]
    if by == "agent" or not agents:
        return df, agents
    if df.select(agents).n_unique() <= 1:
        return df.drop(agents), []
    return (df, ["method"]) if "method" in df.columns else (df, agents)
