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

from typing import Any

import msgspec
import polars as pl
from msgspec import UNSET, Raw

from acp_trace.jsonrpc import id_key
from acp_trace.trace.lines import COLUMNS, SCHEMA, Rows, Table, parse_line
from acp_trace.trace.records import (
    FAILURES,
    FRAME_BYTES,
    INT64,
    MESSAGE,
    NULL,
    RECORDS,
    TEXT,
    Error,
    Message,
    Params,
    Record,
    Result,
    Update,
    is_accepted,
    other_session,
)
from acp_trace.trace.records import fast_rows as _fast_rows

SMALL_BLOCK = 64  # a failing block this small (in lines) goes to the line reader whole
FAST_MIN_BYTES = 64 << 10  # a smaller block is read into row tuples (quicker to start)


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


def _fast(
    block: bytes, trace: str, first: int, headers: list[int]
) -> tuple[pl.DataFrame | None, int]:
    """The rows of a block whose records all decode, and its number of lines (None when a
    record does not decode); lines that decode but cannot be read exactly here are read by
    the line reader."""
    try:
        recs = RECORDS.decode_lines(block)
    except FAILURES:
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


def _not_as_written(block: bytes, recs: list[Record], *, exact_sum: bool) -> set[int] | None:
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
        + FRAME_BYTES
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
    except FAILURES:
        pass
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(decoder.decode(raw))
        except FAILURES:
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
    recs: list[Record], rows: list[int], odd: set[int], trace: str, first: int
) -> pl.DataFrame | None:
    """The rows of the message records among `rows`."""
    raws = [recs[i].msg for i in rows]
    rows, msgs = _keep(rows, _decoded(MESSAGE, raws), odd)
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


_FIELDS = (
    "kind",
    "id",
    "method",
    "session_id",
    "update_kind",
    "update_session",
    "error_code",
    "has_message_id",
    "state",
    "stop_reason",
    "accepted",
)


def _fields(msgs: list[Message]) -> dict[str, list[Any]]:
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
    sessions = [p.sessionId if type(p) is Params else None for p in params]
    for i, session in enumerate(sessions):
        if session is None:
            sessions[i] = other_session(msgs[i])
    updates = [p.update if type(p) is Params else None for p in params]
    update = [x if isinstance(x, Update) else None for x in updates]
    low, high = INT64
    codes = [m.error.code if type(m.error) is Error else None for m in msgs]
    columns: dict[str, list[Any]] = {
        "kind": kinds,
        "id": ids,
        "method": [m.method if type(m.method) is str else None for m in msgs],
        "session_id": [s if type(s) is str else None for s in sessions],
        "error_code": [c if type(c) is int and low <= c <= high else None for c in codes],
        **_update_columns(update, kinds, msgs),
    }
    return {name: columns[name] for name in _FIELDS}


def _update_columns(
    update: list[Update | None], kinds: list[str], msgs: list[Message]
) -> dict[str, list[Any]]:
    """The columns read from each message's `params.update` (None where it is no object)."""
    stops = [None if x is None else x.stopReason for x in update]
    for i, kind in enumerate(kinds):
        if kind == "response" or kind == "error":
            result = msgs[i].result
            stops[i] = result.stopReason if type(result) is Result else None
    null = NULL
    return {
        "update_kind": [
            None if x is None or type(x.sessionUpdate) is not str else x.sessionUpdate
            for x in update
        ],
        "update_session": [
            None if x is None or type(x.sessionId) is not str else x.sessionId for x in update
        ],
        "has_message_id": [
            None if x is None else bool(x.messageId) and x.messageId != null for x in update
        ],
        "state": [None if x is None or type(x.state) is not str else x.state for x in update],
        "stop_reason": [s if type(s) is str else None for s in stops],
        "accepted": [None if x is None else is_accepted(x) for x in update],
    }


def _texts(
    recs: list[Record], rows: list[int], odd: set[int], trace: str, first: int
) -> pl.DataFrame | None:
    """The rows of the text records among `rows`."""
    rows, texts = _keep(rows, _decoded(TEXT, [recs[i].text for i in rows]), odd)
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
