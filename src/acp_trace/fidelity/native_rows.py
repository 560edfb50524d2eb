"""The native path's reading of updates (rules.md "Replay fidelity"): each fidelity update of
the agent read once into the values messages are built from, at msgspec's speed, exactly as
`messages.py` reads it.

msgspec decodes each message into structs that accept only the shapes real agents send: a
string `messageId` / `toolCallId`, content of text blocks (one, or a list), a tool call's
content items each holding a text block, a string or null `status`, `rawOutput` absent or
null. What they accept they read as the Python path does: msgspec refuses what orjson
refuses (a lone surrogate, a control character) and keeps the last of two equal keys, as
orjson does; escapes are decoded alike. A message long enough to nest `DEEP // 2` levels is
left to the Python path (its stdlib fallback stops at a depth of its own). Every other update is
read by the Python path's own functions (`messages.read_update`, `content`), one at a time.
A value that a polars string cannot hold (a lone surrogate the stdlib parser kept) marks its
update `unprovable`: its spans take the Python path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import msgspec
import polars as pl
from msgspec import UNSET, Struct, UnsetType

from acp_trace.fidelity.content import content_text, tool_item_text
from acp_trace.fidelity.messages import TOOL_KINDS, exact_key, read_update
from acp_trace.jsonrpc import json_text


class _Text(Struct, gc=False):
    type: Literal["text"]
    text: str


class _Said(Struct, gc=False):
    messageId: str | UnsetType = UNSET
    content: list[_Text] | _Text | UnsetType | None = UNSET


class _Item(Struct, gc=False):
    type: Literal["content"]
    content: _Text


class _Tool(Struct, gc=False):
    toolCallId: str | UnsetType = UNSET
    status: str | UnsetType | None = UNSET
    content: list[_Item] | UnsetType | None = UNSET
    rawOutput: UnsetType | None = UNSET


class _SaidParams(Struct, gc=False):
    update: _Said


class _ToolParams(Struct, gc=False):
    update: _Tool


class _SaidMessage(Struct, gc=False):
    params: _SaidParams


class _ToolMessage(Struct, gc=False):
    params: _ToolParams


_SAID = msgspec.json.Decoder(_SaidMessage)
_TOOLS = msgspec.json.Decoder(_ToolMessage)
_FAILURES = (msgspec.MsgspecError, RecursionError, ValueError)
BATCH = 4096  # updates decoded in one comprehension (one that fails: one by one)
DEEP = 1000  # a message this long may nest deeply: its brackets are counted first

ROW_SCHEMA: dict[str, Any] = {
    "row": pl.UInt32,
    "ok": pl.Boolean,  # readable (an unreadable update is skipped, as the Python path skips it)
    "key": pl.String,  # the id's exact key (None: no id)
    "text": pl.String,  # a message's content text; a tool call's content items' text
    "has_status": pl.Boolean,
    "status": pl.String,  # a status that is no string: ""
    "has_content": pl.Boolean,
    "has_raw": pl.Boolean,
    "raw": pl.String,  # rawOutput's compact JSON (None: null)
}


class ReadRows:
    """The updates read: `frame()` (ROW_SCHEMA, one row per update that polars can hold, by
    row), `ids` (row -> the id as parsed, for ids that are no string), `unprovable` (rows
    whose values polars cannot hold)."""

    def __init__(self) -> None:
        self.said: dict[str, list[Any]] = {"row": [], "key": [], "text": []}
        self.tools: dict[str, list[Any]] = {name: [] for name in _TOOL_COLUMNS}
        self.odd: list[tuple[Any, ...]] = []
        self.ids: dict[int, Any] = {}
        self.unprovable: set[int] = set()

    def frame(self) -> pl.DataFrame:
        said = pl.DataFrame(self.said, schema={k: ROW_SCHEMA[k] for k in self.said})
        tools = pl.DataFrame(self.tools, schema={k: ROW_SCHEMA[k] for k in _TOOL_COLUMNS})
        native = [
            said.with_columns(has_status=False, has_content=False, has_raw=False),
            tools,
        ]
        native = [f.with_columns(ok=True, key=pl.concat_str(pl.lit("s"), "key")) for f in native]
        odd = pl.DataFrame(self.odd, schema=ROW_SCHEMA, orient="row")
        return pl.concat([odd, *native], how="diagonal_relaxed").select(*ROW_SCHEMA).sort("row")


_TOOL_COLUMNS = ("row", "key", "text", "has_status", "status", "has_content", "has_raw")


def read_rows(updates: pl.DataFrame) -> ReadRows:
    """Each update (`row`, its update `kind` and `msg` text) read."""
    out = ReadRows()
    deep = pl.col("msg").is_null() | (pl.col("msg").str.len_bytes() >= DEEP)
    tool = pl.col("kind").is_in(list(TOOL_KINDS))
    odd = [
        (row, kind, msg)
        for row, kind, msg in updates.filter(deep).iter_rows()
        if msg is None or msg.count("[") + msg.count("{") >= DEEP // 2
    ]
    held = updates.filter(~pl.col("row").is_in([row for row, _, _ in odd]))
    for decoder, fill, name, which in (
        (_SAID, _said, "said", ~tool),
        (_TOOLS, _tools, "tool_call", tool),
    ):
        for rows, decoded in _batches(decoder, held.filter(which), odd, name):
            fill(out, rows, decoded)
    for row, kind, msg in odd:
        got = _python(out, row, kind, msg)
        if got is not None:
            out.odd.append((row, *got))
    return out


def _batches(
    decoder: msgspec.json.Decoder[Any],
    updates: pl.DataFrame,
    odd: list[tuple[int, str, str | None]],
    kind: str,
) -> Iterator[tuple[list[int], list[Any]]]:
    """The updates decoded a batch at a time; those that do not decode go to `odd` (a batch
    where one fails is decoded again one update at a time)."""
    decode = decoder.decode
    rows, msgs = updates["row"].to_list(), updates["msg"].to_list()
    for at in range(0, len(rows), BATCH):
        part, texts = rows[at : at + BATCH], msgs[at : at + BATCH]
        try:
            yield part, [decode(m) for m in texts]
            continue
        except _FAILURES:
            pass
        good: list[tuple[int, Any]] = []
        for row, msg in zip(part, texts, strict=True):
            try:
                good.append((row, decode(msg)))
            except _FAILURES:
                odd.append((row, kind, msg))
        yield [r for r, _ in good], [d for _, d in good]


def _said(out: ReadRows, rows: list[int], decoded: list[_SaidMessage]) -> None:
    ups = [d.params.update for d in decoded]
    contents = [u.content for u in ups]
    out.said["row"].extend(rows)
    out.said["key"].extend([None if u.messageId is UNSET else u.messageId for u in ups])
    out.said["text"].extend(
        [
            c.text
            if type(c) is _Text
            else ("".join([b.text for b in c]) if type(c) is list else "")
            for c in contents
        ]
    )


def _tools(out: ReadRows, rows: list[int], decoded: list[_ToolMessage]) -> None:
    ups = [d.params.update for d in decoded]
    t = out.tools
    t["row"].extend(rows)
    t["key"].extend([None if u.toolCallId is UNSET else u.toolCallId for u in ups])
    t["text"].extend(
        ["".join([i.content.text for i in u.content]) if u.content else "" for u in ups]
    )
    t["has_status"].extend([u.status is not UNSET for u in ups])
    t["status"].extend([None if u.status is UNSET else u.status or "" for u in ups])
    t["has_content"].extend([u.content is not UNSET and u.content is not None for u in ups])
    t["has_raw"].extend([u.rawOutput is None for u in ups])


def _python(out: ReadRows, row: int, kind: str, msg: str | None) -> tuple[Any, ...] | None:
    """An update read by the Python path's functions (None: it cannot be held in polars)."""
    update = read_update(msg)
    if update is None:
        return (False, None, "", False, None, False, False, None)
    tool = kind in TOOL_KINDS
    ident = update.get("toolCallId" if tool else "messageId")
    key = None if ident is None else exact_key(ident)
    if ident is not None and type(ident) is not str:
        out.ids[row] = ident
    values: tuple[Any, ...]
    if not tool:
        values = (key, content_text(update.get("content")), False, None, False, False, None)
    else:
        has_status = "status" in update
        status = update.get("status")
        head = status if isinstance(status, str) else ("" if has_status else None)
        c = update.get("content")
        text = "".join(tool_item_text(i) for i in c) if isinstance(c, list) else ""
        raw = update.get("rawOutput")
        raw_text = None if raw is None else json_text(raw)
        values = (key, text, has_status, head, c is not None, "rawOutput" in update, raw_text)
    if not all(holdable(v) for v in values):
        out.unprovable.add(row)
        return None
    return (True, *values)


def holdable(value: Any) -> bool:
    """Whether a polars string can hold `value` (a lone surrogate it cannot)."""
    if type(value) is not str:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
