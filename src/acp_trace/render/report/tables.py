"""Tables for a terminal, drawn with rich: aligned columns that fit a width, numbers on the
right, headers that say their unit, trace text escaped. No colour unless asked for.

Ids and names (sessions, agents, methods, rule ids, traces) are never split over lines: to
fit a terminal they are shortened in the middle with an ellipsis (`@agentc…claude-agent-acp`),
both ends kept, since both tell ids apart; with no width (output that is no terminal) nothing
is shortened or wrapped, and `--format json|csv` and `--wide` keep every value whole.

`table(df)` builds a rich Table of any analysis table; `to_text(renderable, width)` renders it
(plain text, lines without trailing blanks). `replays_table` is the `acp-trace replays` view:
the columns a person reads first, slowest response first.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import polars as pl
from rich import box
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from acp_trace.errors import UsageError
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted, ms
from acp_trace.render.escape import terminal

# A header rule of `-` and no other lines: pastes into an issue or a commit message as it is.
RULE = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
UNLIMITED = 100_000  # the width of a table that is not fitted to a terminal
FOLD_LEAST = 8  # the narrowest a shortened name column gets (`@ag…acp`)
FOLD_MIN = 5  # ... when the room is short of that for each (`@…acp`)
ELLIPSIS = "…"
OUTCOME_STYLES = {
    "complete": "green",
    "v1_loaded": "green",
    "unmarked": "yellow",
    "truncated": "red",
    "complete_failed": "red",
    "v1_failed": "red",
    "rejected": "yellow",
    "open": "yellow",
}


# Integer columns that are positions or identifiers, not quantities: written without
# thousands separators, as the messages write them (`seq 12345`, `error -32602`).
POSITIONS = frozenset(
    {"seq", "line", "n", "request", "protocol", "error_code", "exit_code", "exit_signal", "pid"}
)


def cell(value: Any, column: str = "") -> str:
    """One value as table text: `-` for none, milliseconds as `quantities.ms` writes them,
    counts with thousands separators (not a `column` that is a position: `seq`, `*_seq`,
    codes), trace text escaped."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return ms(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if column in POSITIONS or column.endswith("_seq") else count(value)
    if isinstance(value, list | dict):
        return terminal(json_text(value))  # integers beyond 64 bits too
    return terminal(str(value))


def label(column: str) -> str:
    """A header: the column name with spaces, so it may wrap (`p50_ms` -> `p50 ms`)."""
    return column.replace("_", " ")


def table(
    df: pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    labels: dict[str, str] | None = None,
    fold: Sequence[str] = (),
    width: int | None = None,
) -> Table:
    """A rich Table of `columns` (default: all) of `df`, numbers right-aligned, headers that
    wrap at spaces. To fit `width`, the `fold` columns (ids and names: trace, agent, session,
    method, rule) are shortened in the middle with an ellipsis, each keeping a readable share;
    the others keep their width. No cell is ever split over lines, and no number or other
    unfolded cell is ever cut: a table that cannot fit even then is drawn as wide as it
    needs (the terminal wraps its lines)."""
    columns = list(columns or df.columns)
    labels = {name: (labels or {}).get(name, label(name)) for name in columns}
    cells = {name: [cell(v, name) for v in df[name]] for name in columns}
    widths = _fold_widths(cells, labels, [c for c in columns if c in fold], width)
    for name, size in widths.items():
        if name in fold:
            cells[name] = [shorten(text, size) for text in cells[name]]
    needed = sum(widths.values()) + 2 * (len(columns) - 1) if widths else 0
    grid = Table(
        box=RULE,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
        width=needed if width is not None and needed > width else None,
    )
    for name in columns:
        grid.add_column(
            labels[name],
            justify="right" if df.schema[name].is_numeric() else "left",
            overflow="fold",  # a header's long word; cells are never split (`_styled`)
            width=widths.get(name),
        )
    for number in range(df.height):
        grid.add_row(*(_styled(name, cells[name][number]) for name in columns))
    return grid


def shorten(text: str, size: int) -> str:
    """`text` in at most `size` terminal cells: whole when it fits, else its start, an
    ellipsis and its end (the end gets the larger part: ids and file names differ there)."""
    if cell_len(text) <= size:
        return text
    if size <= 1:
        return ELLIPSIS[:size]
    head_size = (size - 1) // 3
    head = _fit(text, head_size)
    tail = _fit(text[::-1], size - 1 - cell_len(head))[::-1]
    return head + ELLIPSIS + tail


def _fit(text: str, size: int) -> str:
    """The longest start of `text` that takes at most `size` terminal cells."""
    out = ""
    for char in text:
        if cell_len(out + char) > size:
            break
        out += char
    return out


def _natural(values: list[str], header: str) -> int:
    """The least width a column wants: its longest cell, or its header's longest word."""
    return max([cell_len(v) for v in values] + [len(w) for w in header.split()] + [1])


def _fold_widths(
    cells: dict[str, list[str]], labels: dict[str, str], fold: list[str], width: int | None
) -> dict[str, int]:
    """Column widths that fit `width`, or {} when the table fits as it is (or `width` is None).
    The other columns keep their longest cell (their headers wrap at spaces); the fold columns
    share the room left: the shorter ones whole, the longer ones an equal share each (water
    filling), never narrower than FOLD_LEAST."""
    if width is None:
        return {}
    room = width - 2 * (len(cells) - 1)
    whole = sum(
        max([len(labels[n])] + [cell_len(v) for v in values]) for n, values in cells.items()
    )
    if whole <= room:
        return {}
    whole_width = {name: _natural(values, labels[name]) for name, values in cells.items()}
    widths = {name: w for name, w in whole_width.items() if name not in fold}
    room -= sum(widths.values())
    # a name column first gets what keeps its values apart, the rest of the room after
    natural = {**whole_width, **{n: _apart(cells[n], whole_width[n], labels[n]) for n in fold}}
    left = sorted(fold, key=lambda name: natural[name])
    least = FOLD_LEAST if room >= FOLD_LEAST * len(left) else FOLD_MIN  # a tight terminal
    while left:
        share = max(least, room // len(left))
        if natural[left[0]] <= share:
            widths[left[0]] = natural[left[0]]
            room -= natural[left[0]]
            left.pop(0)
            continue
        widths.update({name: share for name in left})
        widths[left[-1]] += max(0, room - share * len(left))  # the rounding, to the longest
        return widths
    for name in sorted(fold, key=lambda name: whole_width[name]):  # then as whole as fits
        grow = min(max(0, room), whole_width[name] - widths[name])
        widths[name] += grow
        room -= grow
    for name in cells:  # room to spare: headers on one line, from the left
        grow = min(max(0, room), len(labels[name]) - widths[name])
        if grow > 0:
            widths[name] += grow
            room -= grow
    return widths


APART_UP_TO = 200  # distinct values of a column whose shortest distinct form is searched


def _apart(values: list[str], whole: int, header: str) -> int:
    """The narrowest width (from FOLD_LEAST, and the header's longest word) at which the
    column's distinct values stay distinct once shortened: ids that share a long start or
    end need the part that differs, the rest can wait. `whole` for many distinct values."""
    distinct = set(values)
    least = max([FOLD_LEAST] + [len(w) for w in header.split()])
    if len(distinct) > APART_UP_TO:
        return whole
    for size in range(least, whole):
        if len({shorten(v, size) for v in distinct}) == len(distinct):
            return size
    return whole


def _styled(name: str, text: str) -> Text:
    """A cell on one line (an ellipsis at its end if a column is narrower still)."""
    style = OUTCOME_STYLES.get(text, "") if name == "outcome" else ""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def to_text(renderable: RenderableType, width: int | None = None, *, color: bool = False) -> str:
    """Render for a terminal `width` columns wide (None: as wide as the content needs), with
    ANSI colour only when `color`; lines end without trailing blanks."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width or UNLIMITED,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
    )
    console.print(renderable, crop=False)  # a table too wide to fit is whole, not cut
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


# ---------------------------------------------------------------- acp-trace replays

DEFAULT_COLUMNS = (
    "agent",
    "agent_version",
    "session",
    "outcome",
    "history_updates",
    "gap_ms",
    "gap_source",
    "response_ms",
)
REPLAY_LABELS = {"agent_version": "version"}
FOLD = ("trace", "agent", "session", "parent_session", "request_id", "gap_source")
# What a person needs least to tell replay rows apart, left out first (in this order) when a
# terminal is too narrow to show the names READABLE wide (README: `replays` at 80 columns).
NARROW_DROPS = ("gap_source", "history_updates")
READABLE = 16  # cells of a name column that tell most agents apart (claude-agent-acp)


def replays_view(replays: pl.DataFrame) -> pl.DataFrame:
    """The replays table for a person: every column (`gap_ms` and `gap_source` among them:
    from the marker, else a vendor end-of-replay event, else the last history update, to the
    response), slowest response first; rows of one request (a session and its children) stay
    together in their order. `bytes_by_kind` reads `tool_call_update 9,120, user_message 310`."""
    if "bytes_by_kind" in replays.columns:
        replays = replays.with_columns(
            pl.Series(
                "bytes_by_kind",
                [by_kind_text(v) for v in replays["bytes_by_kind"].to_list()],
                dtype=pl.String,
            )
        )
    return replays.sort("response_ms", descending=True, nulls_last=True, maintain_order=True)


def by_kind_text(pairs: list[dict[str, Any]] | None) -> str | None:
    """`bytes_by_kind` for a person: `tool_call_update 9,120, user_message 310` (largest
    first); None for no row, `-` for a replay without history."""
    if pairs is None:
        return None
    return ", ".join(f"{p['kind']} {count(p['bytes'])}" for p in pairs) or "-"


def replays_data(replays: pl.DataFrame, untimed: Sequence[str] = ()) -> pl.DataFrame:
    """`replays --format json|csv` and the report's replays.csv: every column the replays
    table has, rows in trace order, with the gap (`gap_ms`; `gap_source`: `marker` or
    `last_history`, null where no gap was measured) added when the table lacks them."""
    if {"gap_ms", "gap_source"} <= set(replays.columns):
        return replays
    from acp_trace.render.plots.gap import with_gap

    return with_gap(replays, untimed)


def replay_columns(
    view: pl.DataFrame, columns: Sequence[str] | None = None, *, wide: bool = False
) -> list[str]:
    """The columns shown: `columns` as asked (checked against the table), every one with
    `wide`, else DEFAULT_COLUMNS."""
    if columns:
        unknown = [c for c in columns if c not in view.columns]
        if unknown:
            raise UsageError(
                f"--columns {','.join(unknown)}: no such column; "
                f"the columns are {', '.join(view.columns)}"
            )
        return list(columns)
    return view.columns if wide else list(DEFAULT_COLUMNS)


def replays_table(
    replays: pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    wide: bool = False,
    width: int | None = None,
    untimed: Sequence[str] = (),
) -> RenderableType:
    """`acp-trace replays` as a person reads it: the table (see `replays_view` and
    `replay_columns`), then what the rows are, what the gap is, and which traces have no
    timestamps (`untimed`, the ordering-only ones among them)."""
    from rich.console import Group

    view = replays_view(replays)
    traces = view["trace"].n_unique()
    if not view.height:
        return Text("No replaying session/resume or session/load in these traces.")
    shown = replay_columns(view, columns, wide=wide)
    left_out: list[str] = []
    if width is not None and not (columns or wide) and not fits(view.select(shown), width):
        view = readable_agents(view)
        shown, left_out = _fitting(view, shown, width)
    root = _common_folder(view["trace"].unique().to_list()) if "trace" in shown else ""
    if root:
        view = view.with_columns(pl.col("trace").str.strip_prefix(root))
    requests = view.select("trace", "request_id").n_unique()
    about = (
        f"{counted(view.height, 'replay row')} ({counted(requests, 'replaying request')}) "
        f"in {counted(traces, 'trace')}"
        + (f" under {terminal(root)}" if root else "")
        + ", slowest response first."
    )
    notes = [about]
    if untimed:
        notes.append(
            f"{counted(len(untimed), 'trace')} without timestamps (ordering-only): "
            "times show as -, outcomes and counts stand."
        )
    if "gap_ms" in shown:
        notes.append(
            "gap ms: to the response from what gap source names: the replay_complete marker "
            "(marker), else the vendor end-of-replay event PATH (vendor:PATH, such as "
            "claude-agent-acp's jetbrains.air.loadReplayEnd: a vendor event, never a marker), "
            "else the last history update (last_history)."
        )
    notes += left_out_note(left_out, width, "a wider terminal, --wide or --columns")
    if not (columns or wide):
        notes.append("More columns: --wide, or --columns NAME,... (names as in --format csv).")
    grid = table(view, shown, labels=REPLAY_LABELS, fold=FOLD, width=None if wide else width)
    return Group(grid, *map(Text, notes))


def readable_agents(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with each agent named as a person tells it apart on a terminal: its npm package
    without the scope (`claude-agent-acp`), unless two agents would then read the same."""
    from acp_trace.render.plots._common import unscoped

    if "agent" not in df.columns:
        return df
    pairs = df.select("agent", "agent_version").unique() if "agent_version" in df.columns else None
    agents = [str(a) for a in df["agent"].drop_nulls().unique(maintain_order=True)]
    names = {a: unscoped([a])[a] for a in agents}
    if pairs is not None:
        readable = pairs.with_columns(pl.col("agent").replace(names))
        if readable.unique().height < pairs.height:  # two agent versions would read the same
            names = unscoped(agents)
    elif len(set(names.values())) < len(names):
        names = unscoped(agents)
    return df.with_columns(pl.col("agent").replace(names))


def _fitting(view: pl.DataFrame, shown: list[str], width: int) -> tuple[list[str], list[str]]:
    """The default replay columns that fit `width` (`narrow`, NARROW_DROPS left out first)."""
    return narrow(view.select(shown), width, FOLD, NARROW_DROPS, REPLAY_LABELS)


def narrow(
    df: pl.DataFrame,
    width: int,
    fold: Sequence[str],
    drops: Sequence[str],
    labels: dict[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """The columns of `df` shown in `width` cells, and those left out: the `drops` columns,
    in their order, until every column fits whole but the name columns (`fold`), which get
    READABLE cells, or what keeps their values apart (`_apart`) if more. The names are what
    tells rows apart, so they get the room before the columns a person needs least."""
    shown, dropped = list(df.columns), []
    for name in drops:
        if _needed(df, shown, fold, labels or {}) <= width:
            break
        if name in shown:
            shown.remove(name)
            dropped.append(name)
    return shown, dropped


def _needed(df: pl.DataFrame, shown: list[str], fold: Sequence[str], labels: dict[str, str]) -> int:
    """The width `shown` takes (see `narrow`)."""
    total = 2 * (len(shown) - 1)
    for name in shown:
        values, header = [cell(v, name) for v in df[name]], labels.get(name, label(name))
        natural = _natural(values, header)
        if name in fold:
            natural = min(natural, max(READABLE, _apart(values, natural, header)))
        total += natural
    return total


def fits(df: pl.DataFrame, width: int | None, labels: dict[str, str] | None = None) -> bool:
    """Whether `df` fits `width` with every value whole (always, with no width)."""
    if width is None:
        return True
    heads = labels or REPLAY_LABELS
    natural = [
        max([len(heads.get(n, label(n)))] + [cell_len(cell(v, n)) for v in df[n]])
        for n in df.columns
    ]
    return sum(natural) + 2 * (len(natural) - 1) <= width


def left_out_note(dropped: Sequence[str], width: int | None, more: str) -> list[str]:
    """`Left out to fit 80 columns: p99 ms (MORE).`, or nothing when nothing was."""
    if not dropped:
        return []
    names = ", ".join(REPLAY_LABELS.get(c, label(c)) for c in dropped)
    return [f"Left out to fit {width} columns: {names} ({more})."]


def _common_folder(names: list[str]) -> str:
    """The folder every name is under, with its trailing separator ('' when there is none)."""
    if len(names) < 2:
        return ""
    try:
        root = os.path.commonpath(names)
    except ValueError:  # absolute and relative names mixed
        return ""
    return root + os.sep if root and root not in names else ""
