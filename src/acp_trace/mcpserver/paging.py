"""Bounded answers: every tool's rows come a page at a time, and a page never holds more than
`MAX_CHARS` characters of JSON, whatever the traces hold.

A page is the rows from a cursor's offset, at most `limit` of them, and only as many as fit
the size cap; `next_cursor` resumes after the last row sent and `left_out` says in words how
many rows are not in this answer. A row that alone is over the cap has its longest values
cut, and says which (`cut`). The cursor is opaque to the caller: the offset, the arguments it
was made for and the version of the traces, in base64. The text is JSON in which everything
from a trace is escaped (`render.escape.json_safe`: control, bidi and other invisible
characters as `\\uXXXX`; orjson escapes C0 controls).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_trace.errors import UsageError
from acp_trace.quantities import count
from acp_trace.render.escape import json_safe

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_CHARS = 24_000  # about 6,000 tokens: well under what MCP hosts accept from one call
MIN_VALUE = 200  # a value cut to fit is kept to at least this many characters


def dumps(value: Any) -> str:
    """Compact JSON, escaped for any reader; a lone surrogate from a trace (which no JSON
    encoder writes as UTF-8) is shown as the text `\\udXXX`."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        text = orjson.dumps(_no_surrogates(value), option=orjson.OPT_NON_STR_KEYS).decode()
    return json_safe(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_surrogates(v) for v in value]
    return value


@dataclass(frozen=True)
class Page:
    """Which page a call asks for: the arguments that choose its rows (`query`), the cursor
    it was given (None: the first page) and the most rows it wants."""

    tool: str
    query: dict[str, Any] = field(default_factory=dict)
    cursor: str | None = None
    limit: int = DEFAULT_LIMIT

    def key(self) -> str:
        text = orjson.dumps([self.tool, self.query], option=orjson.OPT_SORT_KEYS, default=str)
        return hashlib.blake2b(text, digest_size=6).hexdigest()


def make_cursor(offset: int, page: Page, version: str) -> str:
    raw = orjson.dumps({"o": offset, "q": page.key(), "v": version})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


NOT_OURS = (
    "cursor: not a cursor this server gave; pass next_cursor as it came, or call again without one"
)


def read_cursor(page: Page, version: str) -> tuple[int, str | None]:
    """The offset a cursor resumes at (0 without one) and a note when the traces changed
    since it was made; UsageError for a cursor this server did not give for these arguments."""
    if page.cursor is None or page.cursor == "":
        return 0, None
    text = page.cursor.strip()
    try:
        data = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        offset, key, made_for = data["o"], str(data["q"]), str(data["v"])
    except (binascii.Error, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        raise UsageError(NOT_OURS) from None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise UsageError(NOT_OURS)
    if key != page.key():
        raise UsageError(
            f"cursor: made for other arguments of {page.tool}; call again with the arguments "
            "of the page it came from, or without a cursor"
        )
    note = None
    if made_for != version:
        note = "the traces changed since the first page (a trace was added, grew or went): "
        note += "rows may have moved; call again without a cursor for a consistent listing"
    return offset, note


def bounded(
    rows: Sequence[dict[str, Any]],
    page: Page,
    version: str,
    head: dict[str, Any] | None = None,
    max_chars: int = MAX_CHARS,
) -> str:
    """The JSON answer: `head` (facts of the whole answer), `total`, `offset`, the rows of
    this page, `next_cursor` and `left_out` (both null when nothing is left)."""
    offset, note = read_cursor(page, version)
    if offset > len(rows):
        if note is None:  # the same traces: this server never gave that offset
            raise UsageError(NOT_OURS)
        offset = len(rows)  # the traces shrank since: an empty last page that says so
    limit = max(1, min(page.limit, MAX_LIMIT))
    head = fit(dict(head or {}), max_chars // 2)
    budget = max_chars - len(dumps(head)) - 400  # the keys below and the sentences
    shown: list[dict[str, Any]] = []
    used = 0
    for row in rows[offset : offset + limit]:
        text = dumps(row)
        if len(text) > budget - used:
            if shown:
                break
            row = shrink(row, budget)  # one row alone over the cap: its longest values cut
            text = dumps(row)
        shown.append(row)
        used += len(text) + 1
    while True:
        end = offset + len(shown)
        left = max(0, len(rows) - end)
        answer = {**head, "total": len(rows), "offset": offset, "returned": len(shown)}
        answer["rows"] = shown
        answer["next_cursor"] = make_cursor(end, page, version) if left else None
        answer["left_out"] = _left_out(left, end, len(shown) < min(limit, len(rows) - offset))
        if note:
            answer["note"] = note
        text = dumps(answer)
        if len(text) <= max_chars:
            return text
        if shown:  # escapes the estimate missed: one row fewer
            shown = shown[:-1]
        elif head != HEAD_LEFT_OUT:  # the head itself: only that it was left out is said
            head = HEAD_LEFT_OUT
        else:
            raise AssertionError(f"an empty page is over {max_chars} characters")


def _left_out(left: int, end: int, capped: bool) -> str | None:
    if not left:
        return None
    why = f"the size cap ({count(MAX_CHARS)} characters)" if capped else "the limit"
    return (
        f"{count(left)} more rows after row {count(end)}, left out by {why}: call again with "
        "cursor=next_cursor for them"
    )


def shrink(row: dict[str, Any], budget: int) -> dict[str, Any]:
    """`row` with its longest values cut (each to at least MIN_VALUE characters of its text)
    until it fits `budget`; `cut` names each value cut and its whole length."""
    out = dict(row)
    cut: dict[str, int] = {}
    sizes = sorted(((len(dumps(v)), k) for k, v in row.items()), reverse=True)
    for size, key in sizes:
        if len(dumps(out)) <= budget or size <= MIN_VALUE:
            break
        value = row[key]
        text = value if isinstance(value, str) else dumps(value)
        room = max(MIN_VALUE, len(text) - (len(dumps(out)) - budget) - 100)
        out[key] = text[:room] + "…"
        cut[key] = len(text)
    while len(dumps(out)) > budget:  # escapes made a value longer than its text: halve it
        longest = max(cut, key=lambda k: len(out[k]), default=None)
        if longest is None or len(out[longest]) <= MIN_VALUE:
            break
        out[longest] = out[longest][: len(out[longest]) // 2] + "…"
    if cut:
        out["cut"] = {k: f"{count(n)} characters, the first ones shown" for k, n in cut.items()}
    return out


CUT_NOTE = "cut_to_fit"  # the key of a value that says what `fit` left out of the others
HEAD_LEFT_OUT = {CUT_NOTE: "the facts of this answer were over the size cap: left out"}


def fit(value: dict[str, Any], room: int) -> dict[str, Any]:
    """`value` (the facts at the head of an answer) cut until its JSON fits `room`
    characters: the longest strings to their first characters, the longest lists to their
    first items; `cut_to_fit` says what was cut and how long it was."""
    if len(dumps(value)) <= room:
        return value
    cut: dict[str, str] = {}
    sizes = {k: len(dumps(v)) + len(dumps(k)) + 1 for k, v in value.items()}
    small = {k for k, n in sizes.items() if n <= room // (4 * len(value))}  # kept whole
    big = [k for k in value if k not in small]
    share = max(MIN_VALUE, (room - 400 - sum(sizes[k] for k in small)) // max(1, len(big)))
    out = {k: v if k in small else _fit_part(v, share, k, cut) for k, v in value.items()}
    while len(dumps(out)) + len(dumps(cut)) > room - 200:  # still over: drop the longest
        longest = max(out, key=lambda k: len(dumps(out[k])), default=None)
        if longest is None or out[longest] is None:
            break
        cut[longest] = f"{count(len(dumps(out[longest])))} characters of JSON, left out"
        out[longest] = None
    if len(dumps(cut)) > room // 4:
        cut = {"values": f"{count(len(cut))} values cut to fit the size cap"}
    out[CUT_NOTE] = cut
    return out


def _fit_part(value: Any, room: int, where: str, cut: dict[str, str]) -> Any:
    """One value cut to about `room` characters of JSON (see `fit`); `where` names it."""
    size = len(dumps(value))
    if size <= room:
        return value
    if isinstance(value, str):
        keep = max(MIN_VALUE, room * len(value) // size - 1)
        cut[where[:MIN_VALUE]] = f"{count(len(value))} characters, the first {count(keep)} shown"
        return value[:keep] + "…"
    if isinstance(value, list | tuple):
        shown: list[Any] = []
        used = 2
        for item in value:
            item = _fit_part(item, max(MIN_VALUE, room // 4), f"{where}[{len(shown)}]", cut)
            used += len(dumps(item)) + 1
            if used > room and shown:
                break
            shown.append(item)
        left = len(value) - len(shown)
        if left:
            cut[where[:MIN_VALUE]] = (
                f"{count(len(value))} items, the first {count(len(shown))} shown"
            )
        return shown
    if isinstance(value, dict):
        share = max(MIN_VALUE, room // max(1, len(value)))
        return {k: _fit_part(v, share, f"{where}.{k}", cut) for k, v in value.items()}
    return value
