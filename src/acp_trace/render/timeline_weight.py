"""What `acp-trace timeline` marks of the weight pass (rules.md "Replay weight, client limits
and deadlines"): each line of the client or the agent longer than a known client limit (the
largest it passes), and each silence inside a replaying or `session/new` window (from the
request to its response: no line on the agent's stdout) longer than a known deadline (between
which lines, how long, the largest deadline it passes). One computation for the text and the
JSON timeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from acp_trace.analysis.replay_weight import new_session_windows, window_span
from acp_trace.quantities import count, duration
from acp_trace.render.escape import terminal
from acp_trace.render.weight_facts import deadline_text, limit_text
from acp_trace.weight import Threshold, WeightOptions, WindowSpan
from acp_trace.weight.lines import line_rows


@dataclass(frozen=True)
class Silence:
    """No agent line from `since_row` (the request or the agent's last line) to the row it is
    keyed by, `ms` long, past `deadline` (the largest it passes)."""

    since_row: int
    since_seq: int | None
    ms: float
    deadline: Threshold


@dataclass(frozen=True)
class WeightMarks:
    """Per timeline row: the line's length and the largest limit it passes; the silence that
    ends at it."""

    over: dict[int, tuple[int, Threshold]]
    silences: dict[int, Silence]


NONE = WeightMarks({}, {})


def weight_marks(
    tl: pl.DataFrame,
    windows: list[Any],
    options: WeightOptions,
    lines: pl.DataFrame | None = None,
) -> WeightMarks:
    """The marks of a timeline (`windows`: the replay pass's, replaying ones used; `lines`:
    `weight.lines.line_rows(tl)`, as `Analysis.weight_lines` holds it)."""
    lines = line_rows(tl) if lines is None else lines
    heads = lines.filter(pl.col("head"))
    over: dict[int, tuple[int, Threshold]] = {}
    if options.limits:
        long = heads.filter(pl.col("line_bytes") > options.limits[0].value)
        for row, length in long.select("row", "line_bytes").iter_rows():
            limit = options.largest_limit_passed(int(length))
            if limit is not None:
                over[int(row)] = (int(length), limit)
    silences: dict[int, Silence] = {}
    if options.deadlines:
        spans = [window_span(w) for w in windows if w.replaying]
        spans += [span for _, span in new_session_windows(tl)]
        agent = heads.filter(pl.col("src") == "agent").select("trace", "row")
        by_trace = {str(k[0]): part["row"].to_numpy() for k, part in agent.group_by("trace")}
        times = tl["t_ms"].fill_null(np.nan).to_numpy()
        for span in spans:
            rows = by_trace.get(span.trace, np.empty(0, dtype=np.int64))
            silences.update(_silences(tl, times, rows, span, options))
    return WeightMarks(over, silences)


def _silences(
    tl: pl.DataFrame, t: np.ndarray, agent: np.ndarray, span: WindowSpan, options: WeightOptions
) -> dict[int, Silence]:
    """The silences in one window past a deadline, keyed by the row that ends each: the
    agent's lines after the request up to its response (time that goes back is no silence)."""
    if np.isnan(t[span.req_row]):
        return {}
    stop = span.end_row if span.end_row is not None else tl.height - 1
    lo = int(np.searchsorted(agent, span.req_row, side="right"))
    hi = int(np.searchsorted(agent, stop, side="right"))
    rows = np.concatenate(([span.req_row], agent[lo:hi])).astype(np.int64)
    rows = rows[~np.isnan(t[rows])]
    times = t[rows]
    before = np.maximum.accumulate(times)  # time that goes back is no silence
    gaps = times[1:] - before[:-1]
    # the line each silence starts at: the latest before it with the running maximum time
    start_at = np.maximum.accumulate(np.where(times == before, np.arange(len(rows)), 0))
    out: dict[int, Silence] = {}
    smallest = options.deadlines[0].value
    for i in np.flatnonzero(gaps > smallest):
        deadline = options.largest_deadline_passed(float(gaps[i]))
        if deadline is None:
            continue
        since = int(rows[start_at[i]])
        out[int(rows[i + 1])] = Silence(since, tl["seq"][since], float(gaps[i]), deadline)
    return out


def limit_mark(found: tuple[int, Threshold] | None, pad: str, bar: str) -> list[str]:
    """The text timeline's line under a line longer than a limit (its clients escaped)."""
    if found is None:
        return []
    length, limit = found
    return [
        f"{pad}{bar}   >> a line of {count(length)} bytes: longer than "
        f"{terminal(limit_text(limit))}\n"
    ]


def silence_mark(found: Silence | None, seq: int | None, pad: str, bar: str) -> list[str]:
    """The text timeline's line above the line that ends a silence longer than a deadline."""
    if found is None:
        return []
    return [
        f"{pad}{bar}   .. {duration(found.ms)} with no line from the agent, seq "
        f"{found.since_seq} to seq {seq}: past {terminal(deadline_text(found.deadline))}\n"
    ]
