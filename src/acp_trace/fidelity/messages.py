"""Messages and tool calls of one session inside one span (a replay window or a prompt turn),
built from the agent's updates as rules.md "Replay fidelity" defines them.

v2: a message is a whole-message update and every `*_chunk` with its `messageId`; a chunk with
no `messageId` joins the run of chunks of its kind before it. v1: a message is a maximal run of
chunks of one kind on the session, ended by any other record of the agent's stdout. A tool call
is a `tool_call` and the `tool_call_update`s of its id that follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from acp_trace.fidelity.content import content_text, tool_call_text, utf8_len
from acp_trace.jsonrpc import id_key, loads, loads_exact

# whole-message kinds; a kind + "_chunk" is its chunk form
WHOLE_KINDS = ("user_message", "agent_message", "agent_thought", "session_message")
CHUNK_KINDS = {k + "_chunk": k for k in WHOLE_KINDS}
TOOL_KINDS = ("tool_call", "tool_call_update")
FIDELITY_KINDS = frozenset(WHOLE_KINDS) | frozenset(CHUNK_KINDS) | frozenset(TOOL_KINDS)


class Update(NamedTuple):
    """One agent stdout record inside a span: `kind` is its update kind (None for anything that
    is not a session/update of a fidelity kind), `session` the session it is on (a tuple: one
    is made per record of every span)."""

    row: int
    seq: int | None
    session: str | None
    kind: str | None
    msg: str | None


@dataclass
class Message:
    """A message (`kind` a whole-message kind) or a tool call (`kind` "tool_call")."""

    kind: str
    id: Any  # messageId / toolCallId as parsed (None when the updates carried none)
    first_row: int
    first_seq: int | None
    trace: str | None = None  # the recording it came from (set for a source's messages)
    rows: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    has_whole: bool = False
    # a tool call's last status, content list and rawOutput
    status: Any = None
    tool_content: Any = None
    raw_output: Any = None
    had_content: bool = False

    # set by `done` once the span is built (its pieces complete)
    key: str | None = None  # the id as an exact key (`1` and `"1"` differ), None: no id
    text: str = ""
    bytes: int = 0

    def done(self) -> None:
        """Fix the key, content text and bytes once every piece is in."""
        self.key = None if self.id is None else exact_key(self.id)
        if self.kind == "tool_call":
            self.text = tool_call_text(
                self.status, self.tool_content, self.raw_output, self.had_content
            )
        else:
            self.text = "".join(self.pieces)
        self.bytes = utf8_len(self.text)


@dataclass
class Built:
    """What one span carried on one session: its messages in order of their first record, the
    repeated whole updates and tool calls (`duplicated`), and v2 chunks that came before their
    message's whole update (`chunk_first`: (row, seq, id) of the first such chunk per id)."""

    messages: list[Message] = field(default_factory=list)
    duplicated: list[Message] = field(default_factory=list)
    chunk_first: list[tuple[int | None, Any, str]] = field(default_factory=list)  # seq, id, kind
    unreadable: int = 0  # updates whose message could not be parsed


def build(updates: Iterable[Update], session: str, *, v2: bool) -> Built:
    """The messages and tool calls of `session` among `updates` (agent stdout, in order)."""
    return _Builder(session, v2).run(updates)


class _Builder:
    def __init__(self, session: str, v2: bool) -> None:
        self.session, self.v2 = session, v2
        self.out = Built()
        self.by_id: dict[tuple[str, str], Message] = {}
        self.run_msg: Message | None = None  # the open run of chunks (v1; v2 chunks with no id)
        self.chunked: set[tuple[str, str]] = set()  # (kind, id) of chunks seen before a whole

    def run(self, updates: Iterable[Update]) -> Built:
        for u in updates:
            if u.session != self.session or u.kind not in FIDELITY_KINDS:
                self.run_msg = None  # any other record of the agent's stdout ends a v1 run
                continue
            update = read_update(u.msg)
            if update is None:
                self.out.unreadable += 1
                self.run_msg = None
                continue
            if u.kind in TOOL_KINDS:
                self.run_msg = None
                self._tool(u, update)
            elif u.kind in CHUNK_KINDS:
                self._chunk(u, CHUNK_KINDS[u.kind], update)
            else:
                self.run_msg = None
                self._whole(u, u.kind, update)
        for m in self.out.messages:
            m.done()
        return self.out

    def _new(self, u: Update, kind: str, ident: Any) -> Message:
        m = Message(kind, ident, u.row, u.seq)
        self.out.messages.append(m)
        if ident is not None:
            self.by_id[(kind, exact_key(ident))] = m
        return m

    def _whole(self, u: Update, kind: str, update: dict[str, Any]) -> None:
        ident = update.get("messageId")
        m = self.by_id.get((kind, exact_key(ident))) if ident is not None else None
        if m is None:
            m = self._new(u, kind, ident)
        elif m.has_whole:
            self.out.duplicated.append(m)  # a repeated whole update is one message
        m.has_whole = True
        m.rows.append(u.row)
        m.pieces.append(content_text(update.get("content")))

    def _chunk(self, u: Update, kind: str, update: dict[str, Any]) -> None:
        ident = update.get("messageId") if self.v2 else None
        if ident is None:
            run = self.run_msg
            m = run if run is not None and run.kind == kind and run.id is None else None
            m = m or self._new(u, kind, None)
            self.run_msg = m
        else:
            self.run_msg = None
            key = (kind, exact_key(ident))
            m = self.by_id.get(key) or self._new(u, kind, ident)
            if not m.has_whole and key not in self.chunked:
                self.chunked.add(key)
                self.out.chunk_first.append((u.seq, ident, kind))
        m.rows.append(u.row)
        m.pieces.append(content_text(update.get("content")))

    def _tool(self, u: Update, update: dict[str, Any]) -> None:
        ident = update.get("toolCallId")
        key = ("tool_call", exact_key(ident)) if ident is not None else None
        m = self.by_id.get(key) if key else None
        if u.kind == "tool_call":
            if m is not None:
                self.out.duplicated.append(m)
            else:
                m = self._new(u, "tool_call", ident)
        elif m is None:  # an update for an unknown id: a tool call of its own
            m = self._new(u, "tool_call", ident)
        m.rows.append(u.row)
        if "status" in update:
            m.status = update["status"]
        if "content" in update and update["content"] is not None:
            m.tool_content, m.had_content = update["content"], True
        if "rawOutput" in update:
            m.raw_output = update["rawOutput"]


def exact_key(value: Any) -> str:
    """A message or tool call id as a key that keeps its JSON type and value exactly (`1` and
    `"1"` differ, integers beyond 64 bits too): `jsonrpc.id_key` behind a tag, with the two
    common types (strings, integers) made without writing JSON."""
    if type(value) is str:
        return "s" + value
    if type(value) is int:
        return "i" + str(value)
    return "j" + id_key(value)


def read_update(msg: str | None) -> dict[str, Any] | None:
    """The `params.update` of a session/update message (None: unreadable), ids exact (an id beyond 64 bits that
    orjson read as a float is read again exactly)."""
    try:
        parsed = orjson.loads(msg or "")
    except orjson.JSONDecodeError:
        parsed = None  # what orjson refuses but JSON allows (a lone surrogate): the stdlib
    try:
        if parsed is None:
            parsed = loads(msg or "")
        update = parsed["params"]["update"]
        if not isinstance(update, dict):
            return None
        if isinstance(update.get("messageId"), float) or isinstance(
            update.get("toolCallId"), float
        ):
            update = loads_exact(msg or "")["params"]["update"]
    except (ValueError, KeyError, TypeError):
        return None
    return update if isinstance(update, dict) else None
