"""What the weight pass found about one replay, as every output names it (rules.md "Replay
weight, client limits and deadlines"): the ReplayWeight of a window's session, the tool a line
is about, a limit or deadline with the clients that have it. One source of these words for the
chart, the report, the timeline and the MCP answer. Texts are raw: each renderer escapes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from acp_trace.quantities import count, duration
from acp_trace.weight import ReplayWeight, Threshold

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis
    from acp_trace.analysis.replays import Facts, Window

TOOL_KINDS = ("tool_call", "tool_call_update")
PARSED_MAX = 16 << 20  # a line longer than this is read for its tool by its first bytes only
HEAD_CHARS = 1 << 16
TOOL_CHARS = 120  # of a title or toolCallId
_TITLE = re.compile(r'"title"\s*:\s*"((?:[^"\\]|\\.){1,400})"')
_CALL_ID = re.compile(r'"toolCallId"\s*:\s*"((?:[^"\\]|\\.){1,400})"')


def weight_rows(facts: Facts) -> dict[tuple[int, str], int]:
    """(request row, session) -> its place in the replays table (and in `Analysis.weights`):
    the replaying windows in order, each window's sessions in order."""
    out: dict[tuple[int, str], int] = {}
    for w in facts.windows:
        if w.replaying:
            for session in w.sessions:
                out[(w.req_row, session)] = len(out)
    return out


def window_weight(a: Analysis, w: Window, session: str | None = None) -> ReplayWeight | None:
    """The ReplayWeight of `session` (default: the resumed one) in window `w`."""
    at = weight_rows(a.facts).get((w.req_row, session or w.session))
    return None if at is None else a.weights[at]


def tool_of(tl: pl.DataFrame, row: int | None) -> str | None:
    """The tool a line is about when it is a tool call (update): the call's `title` (an
    update without one: the title of the tool_call of its `toolCallId` before it on the
    session), else its `toolCallId`, cut to TOOL_CHARS; None for any other line."""
    if row is None or tl["update_kind"][row] not in TOOL_KINDS:
        return None
    title, call_id = _named(tl["msg"][row] or tl["text"][row] or "")
    if title is None and call_id is not None:
        title = _call_title(tl, row, call_id)
    found = title or call_id
    return None if not found else found[:TOOL_CHARS]


def _named(text: str) -> tuple[str | None, str | None]:
    """A tool call (update)'s `title` and `toolCallId`: parsed, or found in its first bytes
    when it is too long to parse or cut."""
    if len(text) <= PARSED_MAX:
        try:
            update = _get(_get(orjson.loads(text), "params"), "update")
        except orjson.JSONDecodeError:
            update = None
        if isinstance(update, dict):
            title, call_id = update.get("title"), update.get("toolCallId")
            return (
                title if isinstance(title, str) and title else None,
                call_id if isinstance(call_id, str) and call_id else None,
            )
    head = text[:HEAD_CHARS]
    title, call_id = _TITLE.search(head), _CALL_ID.search(head)
    return (
        _unquoted(title.group(1)) if title else None,
        _unquoted(call_id.group(1)) if call_id else None,
    )


def _call_title(tl: pl.DataFrame, row: int, call_id: str) -> str | None:
    """The title of the latest tool_call of `call_id` before `row` on its trace and session."""
    calls = tl.slice(0, row).filter(
        pl.col("update_kind") == "tool_call",
        pl.col("trace") == tl["trace"][row],
        pl.col("session") == tl["session"][row],
    )  # eager: the text is searched in the tool calls only
    calls = calls.filter(pl.col("msg").str.contains(call_id, literal=True))
    for text in reversed(calls["msg"].to_list()):
        title, found = _named(text or "")
        if found == call_id and title:
            return title
    return None


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _unquoted(text: str) -> str:
    try:
        value = orjson.loads(f'"{text}"')
    except orjson.JSONDecodeError:
        return text
    return value if isinstance(value, str) else text


def line_text(kind: str | None, tool: str | None, length: int | None) -> str:
    """`tool_call_update "Read a.py", 5,200,000 bytes` (the tool in quotes when there is one)."""
    what = kind or "line"
    if tool:
        what += f' "{tool}"'
    return what if length is None else f"{what}, {count(length)} bytes"


def limit_text(limit: Threshold) -> str:
    """`the 16 MiB limit of Effect's ndjson ...`: a limit's name and who has it."""
    return f"the {limit.name} limit of {limit.clients}"


def deadline_text(deadline: Threshold) -> str:
    """`the 10 s deadline of an SDK's default request timeout`."""
    return f"the {deadline.name} deadline of {deadline.clients}"


def quiet_text(window_ms: float, cap_ms: float) -> str:
    """How the quiet-window client guesses the end of a replay: `250 ms with no update (at
    most 10,000 ms after the request)`."""
    return f"{duration(window_ms)} with no update (at most {duration(cap_ms)} after the request)"
