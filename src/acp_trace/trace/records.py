"""The records of format v1 as msgspec decodes them: typed structs with only the fields the
analyzer needs (`msg` and `text` as their bytes exactly as written), and the reading of one
record whose line is the recorder's form into a row (see `trace.blocks` for why that is the
line reader's row exactly)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from acp_trace.jsonrpc import ACCEPTANCE_META_KEY, id_key
from acp_trace.trace.lines import Rows, parse_line

Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Scalar = str | int | float | bool | None
Array = list[Raw]  # read no further: the analyzer needs nothing inside
Object = dict[str, Raw]
Value = Scalar | Array | Object  # any JSON value; only a string is taken
_EMPTY = Raw(b"")
# The recorder's record is `{"seq":` N `,"t_ns":` N `,"src":"` S `","msg":` V `}`: 32 bytes
# besides its values (33 with `text`).
FRAME_BYTES = 32


class Record(Struct, forbid_unknown_fields=True, gc=False):
    seq: Int64
    t_ns: Int64 | None
    src: Literal["client", "agent", "stderr"]
    msg: Raw = _EMPTY
    text: Raw = _EMPTY


class Acceptance(Struct, gc=False):
    state: Value = None


class Meta(Struct, gc=False):
    acceptance: Acceptance | Array | Scalar = msgspec.field(default=None, name=ACCEPTANCE_META_KEY)


class Update(Struct, gc=False):
    sessionUpdate: Scalar = None
    sessionId: Scalar = None
    messageId: Raw = _EMPTY  # only whether it is there (and not null)
    state: Value = None
    stopReason: Value = None
    meta: Meta | Array | Scalar = msgspec.field(default=None, name="_meta")


class Params(Struct, gc=False):
    sessionId: Scalar = None
    update: Update | Array | Scalar = None


class Result(Struct, gc=False):
    sessionId: Scalar = None
    stopReason: Value = None


class Data(Struct, gc=False):
    sessionId: Scalar = None


class Error(Struct, gc=False):
    code: Scalar = None
    data: Data | Array | Scalar = None


class Message(Struct, gc=False):
    jsonrpc: Scalar = None
    id: Scalar | UnsetType = UNSET
    method: Scalar | UnsetType = UNSET
    params: Params | Array | Scalar = None
    result: Result | Array | Scalar = None
    error: Error | Array | Scalar | UnsetType = UNSET


RECORDS = msgspec.json.Decoder(Record)
MESSAGE = msgspec.json.Decoder(Message)
TEXT = msgspec.json.Decoder(str)
FAILURES = (msgspec.MsgspecError, RecursionError, ValueError)
INT64 = (-(2**63), 2**63 - 1)


def fast_rows(block: bytes, trace: str, first: int, rows: Rows) -> int | None:
    """A small block (a small trace) read the same way, into row tuples: no DataFrame is made
    per block, so many small traces cost what one large one does. None when a record does
    not decode; a line that decodes but cannot be read exactly goes to the line reader."""
    try:
        recs = RECORDS.decode_lines(block)
    except FAILURES:
        return None
    lines = block.split(b"\n")[:-1]
    if len(lines) != len(recs):  # msgspec passes over blank lines
        return None
    add = rows.rows.append
    for number, (rec, line) in enumerate(zip(recs, lines, strict=True), first):
        row = _row(rec, line, trace, number)
        if row is None:
            parse_line(rows, trace, number, line + b"\n", header_ok=False)
        else:
            add(row)
    return len(recs)


def _row(rec: Record, line: bytes, trace: str, number: int) -> tuple[Any, ...] | None:
    """The row of one record whose line is the recorder's form (None for any other)."""
    msg, text = rec.msg, rec.text
    t_ns = 4 if rec.t_ns is None else len(str(rec.t_ns))
    size = len(msg) if msg else len(text) + 1
    if (
        bool(msg) == bool(text)
        or len(line) != FRAME_BYTES + len(str(rec.seq)) + t_ns + len(rec.src) + size
    ):
        return None
    head = (trace, number, rec.seq, None, rec.t_ns, rec.src)
    try:
        if msg:
            data = bytes(msg)
            fields = message_fields(MESSAGE.decode(data))
            return (*head, *fields, len(data), False, None, data.decode("utf-8"), None)
        value = TEXT.decode(text)
    except FAILURES:
        return None
    return (*head, "text", *NO_FIELDS, len(value.encode()), False, None, None, value)


NO_FIELDS = (None,) * 10  # the message columns of a row that is no message


def message_fields(m: Message) -> tuple[Any, ...]:
    """The columns of one message, as `_fields` derives them for many (and `lines.fields_of`
    from a parsed message): kind, id, method, session_id, update_kind, update_session,
    error_code, has_message_id, state, stop_reason, accepted."""
    u = UNSET
    if m.jsonrpc != "2.0" or (m.id is u and m.method is u):
        return ("invalid", *NO_FIELDS)
    if m.method is not u:
        kind = "request" if m.id is not u else "notification"
    else:
        kind = "error" if m.error is not u else "response"
    mid = None if m.id is u else str(m.id) if type(m.id) is int else id_key(m.id)
    params = m.params
    session = params.sessionId if type(params) is Params else None
    if session is None:
        session = other_session(m)
    update = params.update if type(params) is Params else None
    kind_of = session_of = has_id = state = stop = accepted = None
    if isinstance(update, Update):
        kind_of = update.sessionUpdate if type(update.sessionUpdate) is str else None
        session_of = update.sessionId if type(update.sessionId) is str else None
        has_id = bool(update.messageId) and update.messageId != NULL
        state = update.state if type(update.state) is str else None
        stop = update.stopReason
        accepted = is_accepted(update)
    if kind in ("response", "error"):
        stop = m.result.stopReason if type(m.result) is Result else None
    code = m.error.code if type(m.error) is Error else None
    low, high = INT64
    return (
        kind,
        mid,
        m.method if type(m.method) is str else None,
        session if type(session) is str else None,
        kind_of,
        session_of,
        code if type(code) is int and low <= code <= high else None,
        has_id,
        state,
        stop if type(stop) is str else None,
        accepted,
    )


NULL = Raw(b"null")


def is_accepted(update: Update) -> bool:
    """The update's `_meta` holds claude-agent-acp's acceptance signal (`lines.accepted`)."""
    meta = update.meta
    signal = meta.acceptance if type(meta) is Meta else None
    return type(signal) is Acceptance and signal.state == "accepted"


def other_session(m: Message) -> Any:
    """A session named by the result, else by the error's data (when params names none)."""
    session = m.result.sessionId if type(m.result) is Result else None
    if session is None and type(m.error) is Error and type(m.error.data) is Data:
        session = m.error.data.sessionId
    return session
