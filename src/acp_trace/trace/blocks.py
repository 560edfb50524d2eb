"""Reading runs of whole lines of format v1 at native speed, exactly as `trace.lines` does.

A block is a run of whole lines of one trace (each with its newline). msgspec decodes all its
records at once into typed structs: the envelope, with `msg` and `text` as their bytes exactly
as written (`msgspec.Raw`), then of each message only the fields the analyzer needs. A line
is read here only where that gives what the line reader gives; every other line goes to
`lines.parse_line`, so the result is the same whatever the path:

- the envelope holds `seq` and `t_ns` (64-bit integers; `t_ns` may be null), `src` (client,
  agent or stderr) and one of `msg` or `text`, and no other key (b64, truncated records, tap
  events and headers take the line reader);
- the line is the recorder's own form, byte for byte (`{"seq":1,"t_ns":2,"src":"agent",
  "msg":...}` with no space): its length is that of its values exactly, so no key stands twice
  (JSON parsers keep the last of two, the line reader the first `msg` text), none is escaped,
  none is out of order;
- the message is an object whose fields have types that the line reader treats the same way
  (a scalar, an array or an object where an object may stand); its text is valid UTF-8.

A block whose records cannot all be decoded (a damaged line, a blank line, a batch...) is
split in two until the lines that fail are found; they are read by the line reader.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import polars as pl
from msgspec import UNSET, Raw, Struct, UnsetType

from acp_trace.jsonrpc import id_key
from acp_trace.trace.lines import COLUMNS, SCHEMA, Rows, Table, parse_line

Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Scalar = str | int | float | bool | None
Array = list[Raw]  # read no further: the analyzer needs nothing inside
_EMPTY = Raw(b"")
# The recorder's record is `{"seq":` N `,"t_ns":` N `,"src":"` S `","msg":` V `}`: 32 bytes
# besides its values (33 with `text`).
_FRAME_BYTES = 32
SMALL_BLOCK = 64  # a failing block this small (in lines) goes to the line reader whole
FAST_MIN_BYTES = 64 << 10  # a smaller block goes to the line reader (quicker to start)


class _Record(Struct, forbid_unknown_fields=True, gc=False):
    seq: Int64
    t_ns: Int64 | None
    src: Literal["client", "agent", "stderr"]
    msg: Raw = _EMPTY
    text: Raw = _EMPTY


class _Update(Struct, gc=False):
    sessionUpdate: Scalar = None
    sessionId: Scalar = None


class _Params(Struct, gc=False):
    sessionId: Scalar = None
    update: _Update | Array | Scalar = None


class _Result(Struct, gc=False):
    sessionId: Scalar = None


class _Data(Struct, gc=False):
    sessionId: Scalar = None


class _Error(Struct, gc=False):
    code: Scalar = None
    data: _Data | Array | Scalar = None


class _Message(Struct, gc=False):
    jsonrpc: Scalar = None
    id: Scalar | UnsetType = UNSET
    method: Scalar | UnsetType = UNSET
    params: _Params | Array | Scalar = None
    result: _Result | Array | Scalar = None
    error: _Error | Array | Scalar | UnsetType = UNSET


_RECORDS = msgspec.json.Decoder(_Record)
_MESSAGE = msgspec.json.Decoder(_Message)
_TEXT = msgspec.json.Decoder(str)
_FAILURES = (msgspec.MsgspecError, RecursionError, ValueError)
_INT64 = (-(2**63), 2**63 - 1)


def read_block(table: Table, block: bytes, trace: str, first: int) -> int:
    """Add to `table` the rows of `block` (whole lines, the first one numbered `first`), and
    to `table.rows.headers` the numbers of its lines that are v1 headers (see `lines.Rows`);
    returns the number of lines."""
    if len(block) >= FAST_MIN_BYTES:
        frame, count = _fast(block, trace, first, table.rows.headers)
        if frame is not None:
            if frame.height:
                table.add_frame(frame)
            return count
    elif (lines := _fast_rows(block, trace, first, table.rows)) is not None:
        table.check()
        return lines
    count = block.count(b"\n")
    cut = block.rfind(b"\n", 0, len(block) // 2) + 1 or block.find(b"\n") + 1
    if len(block) < FAST_MIN_BYTES or count <= SMALL_BLOCK or cut >= len(block):
        for number, line in enumerate(block.split(b"\n")[:-1], first):
            parse_line(table.rows, trace, number, line + b"\n", header_ok=False)
        table.check()
        return count
    left = read_block(table, block[:cut], trace, first)
    return left + read_block(table, block[cut:], trace, first + left)


def _fast_rows(block: bytes, trace: str, first: int, rows: Rows) -> int | None:
    """A small block (a small trace) read the same way, into row tuples: no DataFrame is made
    per block, so many small traces cost what one large one does. None when a record does
    not decode; a line that decodes but cannot be read exactly goes to the line reader."""
    try:
        recs = _RECORDS.decode_lines(block)
    except _FAILURES:
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


def _row(rec: _Record, line: bytes, trace: str, number: int) -> tuple[Any, ...] | None:
    """The row of one record whose line is the recorder's form (None for any other)."""
    msg, text = rec.msg, rec.text
    t_ns = 4 if rec.t_ns is None else len(str(rec.t_ns))
    size = len(msg) if msg else len(text) + 1
    if (
        bool(msg) == bool(text)
        or len(line) != _FRAME_BYTES + len(str(rec.seq)) + t_ns + len(rec.src) + size
    ):
        return None
    head = (trace, number, rec.seq, None, rec.t_ns, rec.src)
    try:
        if msg:
            data = bytes(msg)
            fields = _message_fields(_MESSAGE.decode(data))
            return (*head, *fields, len(data), False, None, data.decode("utf-8"), None)
        value = _TEXT.decode(text)
    except _FAILURES:
        return None
    empty = (None,) * 6
    return (*head, "text", *empty, len(value.encode()), False, None, None, value)


def _fast(
    block: bytes, trace: str, first: int, headers: list[int]
) -> tuple[pl.DataFrame | None, int]:
    """The rows of a block whose records all decode, and its number of lines (None when a
    record does not decode); lines that decode but cannot be read exactly here are read by
    the line reader."""
    try:
        recs = _RECORDS.decode_lines(block)
    except _FAILURES:
        return None, 0
    msgs = [r.msg for r in recs]
    texts = [r.text for r in recs]
    if all(msgs) and not any(texts):
        odd = set()
    else:  # a record with both payloads or none is malformed
        odd = {i for i, (m, t) in enumerate(zip(msgs, texts, strict=True)) if bool(m) == bool(t)}
    written = _not_as_written(block, recs, exact_sum=not odd)
    if written is None:  # msgspec passed over blank lines
        return None, 0
    odd |= written
    if odd or any(texts):
        msg_rows = [i for i, m in enumerate(msgs) if m and i not in odd]
        text_rows = [i for i, t in enumerate(texts) if t and i not in odd]
    else:
        msg_rows, text_rows = list(range(len(recs))), []
    frames = [
        _messages(recs, msg_rows, odd, trace, first),
        _texts(recs, text_rows, odd, trace, first),
    ]
    if odd:
        rows = Rows()
        lines = block.split(b"\n")
        for i in sorted(odd):
            parse_line(rows, trace, first + i, lines[i] + b"\n", header_ok=False)
        headers.extend(rows.headers)
        frames.append(rows.frame())
    parts = [f for f in frames if f is not None and f.height]
    if len(parts) == 1:
        return parts[0], len(recs)
    frame = pl.concat(parts).sort("line", maintain_order=True) if parts else pl.DataFrame()
    return frame, len(recs)


def _not_as_written(block: bytes, recs: list[_Record], *, exact_sum: bool) -> set[int] | None:
    """The rows whose line is not the recorder's form byte for byte (see the module doc).
    A line of a record with one payload is at least as long as that form, so when the lengths
    add up (`exact_sum`: every record has one payload) each line is exactly that form. None
    when the block has more lines than records (blank lines)."""
    seq = pl.Series(values=[r.seq for r in recs], dtype=pl.Int64)
    t_ns = pl.Series(values=[r.t_ns for r in recs], dtype=pl.Int64)
    src = pl.Series(values=[r.src for r in recs], dtype=pl.String)
    payload = pl.Series(values=[len(r.msg) or len(r.text) + 1 for r in recs], dtype=pl.Int64)
    expected = (
        seq.cast(pl.String).str.len_bytes().cast(pl.Int64)
        + t_ns.cast(pl.String).str.len_bytes().cast(pl.Int64).fill_null(4)
        + src.str.len_bytes().cast(pl.Int64)
        + payload
        + _FRAME_BYTES
    )
    if exact_sum and expected.sum() + len(recs) == len(block):
        return set()
    lines = block.split(b"\n")[:-1]
    if len(lines) != len(recs):
        return None
    lengths = pl.Series(values=[len(line) for line in lines], dtype=pl.Int64)
    return set((expected != lengths).arg_true().to_list())


def _decoded(decoder: msgspec.json.Decoder[Any], raws: list[Raw]) -> list[Any]:
    """Each raw value decoded, or None where it cannot be."""
    try:
        return [decoder.decode(raw) for raw in raws]
    except _FAILURES:
        pass
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(decoder.decode(raw))
        except _FAILURES:
            out.append(None)
    return out


def _utf8(raws: list[Raw]) -> tuple[pl.Series, list[int]]:
    """The raw values as a String column, and the positions of those that are not UTF-8."""
    data = pl.Series(values=[bytes(raw) for raw in raws], dtype=pl.Binary)
    try:
        return data.cast(pl.String), []
    except pl.exceptions.PolarsError:
        bad = []
        for i, raw in enumerate(raws):
            try:
                bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                bad.append(i)
        good = data.cast(pl.String, strict=False)
        return good, bad


def _keep(rows: list[int], values: list[Any], odd: set[int]) -> tuple[list[int], list[Any]]:
    """Drop the rows whose value is None (they go to the line reader)."""
    if all(v is not None for v in values):
        return rows, values
    kept = [(r, v) for r, v in zip(rows, values, strict=True) if v is not None]
    odd.update(r for r, v in zip(rows, values, strict=True) if v is None)
    return [r for r, _ in kept], [v for _, v in kept]


def _messages(
    recs: list[_Record], rows: list[int], odd: set[int], trace: str, first: int
) -> pl.DataFrame | None:
    """The rows of the message records among `rows`."""
    raws = [recs[i].msg for i in rows]
    rows, msgs = _keep(rows, _decoded(_MESSAGE, raws), odd)
    raws = [recs[i].msg for i in rows]
    text, bad = _utf8(raws)
    if bad:
        odd.update(rows[i] for i in bad)
        keep = sorted(set(range(len(rows))) - set(bad))
        rows, msgs, text = [rows[i] for i in keep], [msgs[i] for i in keep], text.gather(keep)
    if not rows:
        return None
    frame = pl.DataFrame(
        {
            "line": [first + i for i in rows],
            "seq": [recs[i].seq for i in rows],
            "t_ns": [recs[i].t_ns for i in rows],
            "src": [recs[i].src for i in rows],
            **_fields(msgs),
        },
        schema={k: SCHEMA[k] for k in ("line", "seq", "t_ns", "src", *_FIELDS)},
    )
    invalid = pl.col("kind") == "invalid"
    return frame.with_columns(
        [pl.when(invalid).then(None).otherwise(pl.col(c)).alias(c) for c in _FIELDS[1:]],
        trace=pl.lit(trace, dtype=pl.String),
        part=pl.lit(None, dtype=pl.Int32),
        bytes=text.str.len_bytes().cast(pl.Int64),
        truncated=pl.lit(False),
        event=pl.lit(None, dtype=pl.String),
        msg=text,
        text=pl.lit(None, dtype=pl.String),
    ).select(COLUMNS)


_FIELDS = ("kind", "id", "method", "session_id", "update_kind", "update_session", "error_code")


def _fields(msgs: list[_Message]) -> dict[str, list[Any]]:
    """The columns derived from the messages, as `lines.fields_of` derives them."""
    u = UNSET
    kinds = [
        "invalid"
        if m.jsonrpc != "2.0" or (m.id is u and m.method is u)
        else ("request" if m.id is not u else "notification")
        if m.method is not u
        else ("error" if m.error is not u else "response")
        for m in msgs
    ]
    ids = [None if m.id is u else str(m.id) if type(m.id) is int else id_key(m.id) for m in msgs]
    params = [m.params for m in msgs]
    sessions = [p.sessionId if type(p) is _Params else None for p in params]
    for i, session in enumerate(sessions):
        if session is None:
            sessions[i] = _other_session(msgs[i])
    updates = [p.update if type(p) is _Params else None for p in params]
    update = [x if isinstance(x, _Update) else None for x in updates]
    update_kinds = [None if x is None else x.sessionUpdate for x in update]
    update_sessions = [None if x is None else x.sessionId for x in update]
    low, high = _INT64
    codes = [m.error.code if type(m.error) is _Error else None for m in msgs]
    return {
        "kind": kinds,
        "id": ids,
        "method": [m.method if type(m.method) is str else None for m in msgs],
        "session_id": [s if type(s) is str else None for s in sessions],
        "update_kind": [k if type(k) is str else None for k in update_kinds],
        "update_session": [s if type(s) is str else None for s in update_sessions],
        "error_code": [c if type(c) is int and low <= c <= high else None for c in codes],
    }


def _message_fields(m: _Message) -> tuple[Any, ...]:
    """The columns of one message, as `_fields` derives them for many (and `lines.fields_of`
    from a parsed message): kind, id, method, session_id, update_kind, update_session,
    error_code."""
    u = UNSET
    if m.jsonrpc != "2.0" or (m.id is u and m.method is u):
        return ("invalid", None, None, None, None, None, None)
    if m.method is not u:
        kind = "request" if m.id is not u else "notification"
    else:
        kind = "error" if m.error is not u else "response"
    mid = None if m.id is u else str(m.id) if type(m.id) is int else id_key(m.id)
    params = m.params
    session = params.sessionId if type(params) is _Params else None
    if session is None:
        session = _other_session(m)
    update = params.update if type(params) is _Params else None
    kind_of = session_of = None
    if isinstance(update, _Update):
        kind_of = update.sessionUpdate if type(update.sessionUpdate) is str else None
        session_of = update.sessionId if type(update.sessionId) is str else None
    code = m.error.code if type(m.error) is _Error else None
    low, high = _INT64
    return (
        kind,
        mid,
        m.method if type(m.method) is str else None,
        session if type(session) is str else None,
        kind_of,
        session_of,
        code if type(code) is int and low <= code <= high else None,
    )


def _other_session(m: _Message) -> Any:
    """A session named by the result, else by the error's data (when params names none)."""
    session = m.result.sessionId if type(m.result) is _Result else None
    if session is None and type(m.error) is _Error and type(m.error.data) is _Data:
        session = m.error.data.sessionId
    return session


def _texts(
    recs: list[_Record], rows: list[int], odd: set[int], trace: str, first: int
) -> pl.DataFrame | None:
    """The rows of the text records among `rows`."""
    rows, texts = _keep(rows, _decoded(_TEXT, [recs[i].text for i in rows]), odd)
    if not rows:
        return None
    frame = pl.DataFrame(
        {
            "line": [first + i for i in rows],
            "seq": [recs[i].seq for i in rows],
            "t_ns": [recs[i].t_ns for i in rows],
            "src": [recs[i].src for i in rows],
            "text": texts,
        },
        schema={k: SCHEMA[k] for k in ("line", "seq", "t_ns", "src", "text")},
    )
    nulls = {c: pl.lit(None, dtype=SCHEMA[c]) for c in ("part", "event", "msg", *_FIELDS[1:])}
    return frame.with_columns(
        trace=pl.lit(trace, dtype=pl.String),
        kind=pl.lit("text"),
        bytes=pl.col("text").str.len_bytes().cast(pl.Int64),
        truncated=pl.lit(False),
        **nulls,
    ).select(COLUMNS)
