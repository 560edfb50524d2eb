"""`explain_replay`'s answer to "what would a client have suffered?" (docs/rules.md, "Replay
weight, client limits and deadlines"): the largest line and the largest client limit it
passes, the longest silence and the largest deadline it passes, where a quiet-window client
would have taken the replay for over and how many history updates came after, in a few
bounded lines (a tool's title cut, the kinds listed at most `KINDS`; their text already
redacted as every answer is)."""

from __future__ import annotations

from typing import Any

from acp_trace.analysis.front import Analysis
from acp_trace.analysis.replays import Window
from acp_trace.quantities import counted, duration
from acp_trace.render.weight_facts import (
    deadline_text,
    limit_text,
    line_text,
    quiet_text,
    tool_of,
    window_weight,
)

KINDS = 5  # update kinds an answer lists, the heaviest first


def weight_said(a: Analysis, w: Window) -> dict[str, Any] | None:
    """The weight of the window's own session's row, in a few lines; None without a row."""
    found = window_weight(a, w)
    if found is None:
        return None
    o = a.weight
    by_kind = found.bytes_by_kind
    return {
        "largest_line": _line(a, found),
        "longest_silence": _silence(a, found.longest_silence_ms),
        "quiet_window": _quiet(a, found.quiet_end_ms, found.updates_after_quiet_end),
        "quiet_end_ms": found.quiet_end_ms,
        "updates_after_quiet_end": found.updates_after_quiet_end,
        "bytes_by_kind": by_kind[:KINDS],
        "kinds_left_out": max(0, len(by_kind) - KINDS),
        "children_bytes": found.children_bytes,
        "limits": [t.name for t in o.limits],
        "deadlines": [t.name for t in o.deadlines],
    }


def _line(a: Analysis, found: Any) -> str:
    if found.largest_update_bytes is None:
        return "no line from the agent on this session in the window"
    tool = tool_of(a.timeline, found.largest_row)
    what = line_text(found.largest_update_kind, tool, found.largest_update_bytes)
    where = f"{what} at seq {found.largest_update_seq}"
    passed = a.weight.largest_limit_passed(found.largest_update_bytes)
    if passed is not None:
        return f"{where}: longer than {limit_text(passed)}"
    if not a.weight.limits:
        return where
    return f"{where}: under every known client limit (the smallest: {a.weight.limits[0].name})"


def _silence(a: Analysis, silence: float | None) -> str | None:
    if silence is None:
        return None
    text = f"{duration(silence)} with no line from the agent"
    passed = a.weight.largest_deadline_passed(silence)
    if passed is not None:
        return f"{text}: past {deadline_text(passed)}"
    if not a.weight.deadlines:
        return text
    return f"{text}: under every known client deadline (the shortest: {a.weight.deadlines[0].name})"


def _quiet(a: Analysis, end: float | None, after: int | None) -> str:
    how = quiet_text(a.weight.quiet_window_ms, a.weight.quiet_cap_ms)
    client = f"a client that takes the replay for over after {how}"
    if end is None:
        return f"{client} would have waited for the response"
    if not after:
        return f"{client} would have stopped at {duration(end)}, after the whole history"
    taken = counted(after, "history update")
    return f"{client} would have stopped at {duration(end)} and taken the {taken} after it for live ones"
