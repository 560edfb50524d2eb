"""What the agent did during the gap: its stderr lines inside each replay's gap, and the phases
they name (docs/analysis.md, "The gap, explained").

The gap of a replay row runs from its session's marker (without one, a vendor end-of-replay
event, else its last history update) to the response, as `gap_ms` does; the stderr
lines *inside* it are those the tap recorded after that update and before the response (by
record order, so ordering-only traces count too). A line names a phase when a pattern of the
registry matches it: one per agent family, then a generic `NAME_ms=N` / `elapsed=Ns` fallback.
A phase is logged when it ends, so it spans `[t - duration, t]` (t: when the tap read the
line). A *leaf* phase contains no other phase of the same gap: `session-ready`, which covers
everything claude-agent-acp does on a load, is not one; `sdk-initialize` is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from acp_trace.analysis.phase_patterns import Phase, parse_phase
from acp_trace.analysis.replays import Facts

TEXT_LIMIT = 200  # characters of `last_stderr_in_gap`


# ---------------------------------------------------------------- gaps and their lines


@dataclass(frozen=True)
class Gap:
    """The gap of one replay row: from the row that starts it to the response."""

    trace: str
    session: str
    request_id: str | None
    req_row: int
    start_row: int | None  # the marker, else a vendor end-of-replay event, else the last history
    end_row: int | None  # the response


def gaps(facts: Facts) -> list[Gap]:
    """One Gap per row of the replays table, in the same order (see replays_table)."""
    out = []
    for w in facts.windows:
        if not w.replaying:
            continue
        end = w.end_row if w.end in ("response", "error") else None
        for stats in w.sessions.values():
            start = stats.gap_origin()[0]
            out.append(Gap(w.trace, stats.session, w.request_id, w.req_row, start, end))
    return out


def _stderr_rows(tl: pl.DataFrame) -> dict[str, list[tuple[int, float | None, str]]]:
    lines = tl.filter(pl.col("src") == "stderr", pl.col("kind") == "text")
    out: dict[str, list[tuple[int, float | None, str]]] = {}
    for trace, row, t_ms, text in lines.select("trace", "row", "t_ms", "text").iter_rows():
        out.setdefault(trace, []).append((row, t_ms, text))
    return out


def _inside(
    gap: Gap, lines: dict[str, list[tuple[int, float | None, str]]]
) -> Iterator[tuple[int, float | None, str]]:
    if gap.start_row is None or gap.end_row is None:
        return
    for row, t_ms, text in lines.get(gap.trace, ()):
        if gap.start_row < row < gap.end_row:
            yield row, t_ms, text


def stderr_in_gaps(tl: pl.DataFrame, facts: Facts) -> pl.DataFrame:
    """Per replay row: `stderr_lines_in_gap` (null without a gap) and `last_stderr_in_gap`
    (control characters escaped, cut to TEXT_LIMIT characters)."""
    lines = _stderr_rows(tl)
    counts: list[int | None] = []
    last: list[str | None] = []
    for gap in gaps(facts):
        inside = list(_inside(gap, lines))
        defined = gap.start_row is not None and gap.end_row is not None
        counts.append(len(inside) if defined else None)
        last.append(_cut(printable(inside[-1][2])) if inside else None)
    return pl.DataFrame(
        {"stderr_lines_in_gap": counts, "last_stderr_in_gap": last},
        schema={"stderr_lines_in_gap": pl.Int64, "last_stderr_in_gap": pl.String},
    )


def printable(text: str) -> str:
    """`text` with every control, format (bidi) and surrogate character written as an escape,
    so a table cell cannot move a terminal's cursor or reorder what a person reads."""
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    code = ord(ch)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


PHASE_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "session": pl.String,
    "request_id": pl.String,
    "phase": pl.String,
    "family": pl.String,
    "start_ms": pl.Float64,
    "duration_ms": pl.Float64,
    "in_gap_ms": pl.Float64,
    "leaf": pl.Boolean,
    "seq": pl.Int64,
    "line": pl.String,
}


def gap_phases(tl: pl.DataFrame, facts: Facts) -> pl.DataFrame:
    """Every phase named by an stderr line inside a replay's gap (PHASE_SCHEMA): its start
    (ms after the request, like the replay timings), duration, the part of it inside the gap,
    whether it is a leaf, and the line (seq, text as recorded)."""
    lines = _stderr_rows(tl)
    t_ms, seqs = tl["t_ms"], tl["seq"]
    rows: list[tuple[Any, ...]] = []
    for gap in gaps(facts):
        found = []
        for row, at, text in _inside(gap, lines):
            phase = parse_phase(text)
            if phase is not None:
                found.append((row, at, text, phase))
        if not found:
            continue
        req_t = t_ms[gap.req_row]
        span = _span(t_ms, gap)
        for row, at, text, phase in found:
            end = None if at is None or req_t is None else at - req_t
            start = None if end is None else end - phase.duration_ms
            rows.append(
                (
                    gap.trace,
                    gap.session,
                    gap.request_id,
                    phase.name,
                    phase.family,
                    start,
                    phase.duration_ms,
                    _overlap(start, end, span),
                    _is_leaf(phase, end, found, req_t),
                    seqs[row],
                    text,
                )
            )
    return pl.DataFrame(rows, schema=PHASE_SCHEMA, orient="row")


def _span(t_ms: pl.Series, gap: Gap) -> tuple[float, float] | None:
    """The gap as ms after the request."""
    assert gap.start_row is not None and gap.end_row is not None
    req, start, end = t_ms[gap.req_row], t_ms[gap.start_row], t_ms[gap.end_row]
    if req is None or start is None or end is None:
        return None
    return start - req, end - req


def _overlap(
    start: float | None, end: float | None, span: tuple[float, float] | None
) -> float | None:
    if start is None or end is None or span is None:
        return None
    return max(0.0, min(end, span[1]) - max(start, span[0]))


def _is_leaf(
    phase: Phase, end: float | None, found: list[tuple[int, float | None, str, Phase]], req_t: Any
) -> bool:
    """No other phase of the gap lies within this one (same or later start, same or earlier
    end, and shorter)."""
    if end is None:
        return True
    start = end - phase.duration_ms
    for _row, at, _text, other in found:
        if other is phase or at is None:
            continue
        o_end = at - req_t
        o_start = o_end - other.duration_ms
        if 0 < other.duration_ms < phase.duration_ms and o_start >= start and o_end <= end:
            return False
    return True


LINE_SCHEMA: dict[str, Any] = {
    "row": pl.Int64,
    "seq": pl.Int64,
    "t_ms": pl.Float64,
    "text": pl.String,
    "phase": pl.String,
    "family": pl.String,
    "duration_ms": pl.Float64,
    "leaf": pl.Boolean,
}


def stderr_between(
    tl: pl.DataFrame, trace: str, after_row: int, before_row: int | None
) -> pl.DataFrame:
    """The stderr lines of `trace` between two timeline rows (both excluded; `before_row`
    None: to the end), each with the phase it names (null columns when none) and whether that
    phase is a leaf among the phases of these lines (LINE_SCHEMA; `t_ms` as in the timeline).
    The replay chart draws a window's lines with it."""
    end = tl.height if before_row is None else before_row
    lines = tl.filter(
        pl.col("trace") == trace,
        pl.col("row") > after_row,
        pl.col("row") < end,
        pl.col("src") == "stderr",
        pl.col("kind") == "text",
    )
    found = []
    for row, t_ms, text in lines.select("row", "t_ms", "text").iter_rows():
        phase = parse_phase(text)
        if phase is not None:
            found.append((row, t_ms, text, phase))
    named = {row: phase for row, _t, _text, phase in found}
    rows: list[tuple[Any, ...]] = []
    for row, seq, t_ms, text in lines.select("row", "seq", "t_ms", "text").iter_rows():
        phase = named.get(row)
        if phase is None:
            rows.append((row, seq, t_ms, text, None, None, None, None))
            continue
        leaf = _is_leaf(phase, t_ms, found, 0.0)
        rows.append((row, seq, t_ms, text, phase.name, phase.family, phase.duration_ms, leaf))
    return pl.DataFrame(rows, schema=LINE_SCHEMA, orient="row")


def largest_phases(phases: pl.DataFrame, replays: pl.DataFrame) -> pl.DataFrame:
    """Per agent and version: the leaf phase with the most time inside a gap, that time, and
    the gap it was in (`phase`, `in_gap_ms`, `gap_ms`), for the report's gap table."""
    keyed = replays.select("trace", "session", "request_id", "agent", "agent_version", "gap_ms")
    joined = phases.filter(pl.col("leaf") & pl.col("in_gap_ms").is_not_null()).join(
        keyed, on=["trace", "session", "request_id"], how="inner", nulls_equal=True
    )
    return (
        joined.sort("in_gap_ms", descending=True, maintain_order=True)
        .group_by("agent", "agent_version", maintain_order=True)
        .first()
        .select("agent", "agent_version", "phase", "in_gap_ms", "gap_ms")
    )
