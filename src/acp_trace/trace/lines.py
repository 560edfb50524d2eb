"""The exact reader of format v1, one line at a time: what every record means, for every line.

`trace.blocks` reads the lines the recorder writes at native speed and hands every line it
cannot read exactly to `parse_line` here, so the two always agree (benchmarks/differential.py
compares them on hostile input). A line gives a row per message (a batch line one per
element), per text line, per tap event, per header and per damaged line (`malformed`).
Nothing here crashes on what a line holds: a lone surrogate, a nesting too deep to parse, an
integer beyond 64 bits are read (see `jsonrpc.clean_text`, `jsonrpc.id_key`) or reported.
"""

from __future__ import annotations

import base64
from array import array
from itertools import groupby, repeat
from typing import Any

import polars as pl

from acp_trace.jsonrpc import (
    ACCEPTANCE_META_KEY,
    as_str,
    clean_text,
    id_key,
    is_message,
    json_text,
    loads,
    loads_exact,
    message_kind,
)
from acp_trace.trace.format import SOURCES, element_spans, msg_text

SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "line": pl.Int64,
    "seq": pl.Int64,
    "part": pl.Int32,
    "t_ns": pl.Int64,
    "src": pl.String,
    "kind": pl.String,
    "id": pl.String,
    "method": pl.String,
    "session_id": pl.String,
    "update_kind": pl.String,
    "update_session": pl.String,
    "error_code": pl.Int64,
    "has_message_id": pl.Boolean,
    "state": pl.String,
    "stop_reason": pl.String,
    "accepted": pl.Boolean,
    "bytes": pl.Int64,
    "truncated": pl.Boolean,
    "event": pl.String,
    "msg": pl.String,
    "text": pl.String,
}
COLUMNS = tuple(SCHEMA)
CUT = "the last line is cut (no newline at the end)"


class Rows:
    """Rows (tuples in COLUMNS order) waiting to become a DataFrame chunk, and the numbers of
    the lines read that are v1 headers where no header was expected (they start a trace of
    their own: see `reader.read_segments`)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.headers: list[int] = []

    def add(self, **values: Any) -> None:
        self.rows.append(tuple(values.get(name) for name in COLUMNS))

    def frame(self) -> pl.DataFrame | None:
        """The pending rows as a DataFrame (None when there are none); the rows are taken."""
        if not self.rows:
            return None
        traces, *columns = zip(*self.rows, strict=True)
        data = dict(zip(COLUMNS[1:], columns, strict=True))
        self.rows = []
        frame = pl.DataFrame(data, schema={k: SCHEMA[k] for k in COLUMNS[1:]})
        return frame.with_columns(trace_column(traces)).select(COLUMNS)


CHUNK_ROWS = 50_000


class Table:
    """A records table being built, in order: frames (of the native path), and the rows of the
    line reader, gathered into frames of about CHUNK_ROWS rows; small frames are joined into
    chunks of that size too, so many small traces make as few chunks as one large one."""

    def __init__(self) -> None:
        self.frames: list[pl.DataFrame] = []
        self.rows = Rows()
        self._small: list[pl.DataFrame] = []
        self._small_rows = 0

    def add_frame(self, frame: pl.DataFrame) -> None:
        self._flush_rows()
        self._add(frame)

    def extend(self, other: Table) -> None:
        """Append another table's frames and rows (after this one's)."""
        for frame in (*other.frames, *other._small):
            self.add_frame(frame)
        self.rows.rows.extend(other.rows.rows)
        self.check()

    def check(self) -> None:
        """Make a frame of the rows once there are enough of them."""
        if len(self.rows.rows) >= CHUNK_ROWS:
            self._flush_rows()

    def done(self) -> list[pl.DataFrame]:
        """The frames of the whole table, in order."""
        self._flush_rows()
        self._flush_small()
        return self.frames

    def _add(self, frame: pl.DataFrame) -> None:
        if frame.height >= CHUNK_ROWS:
            self._flush_small()
            self.frames.append(frame)
            return
        self._small.append(frame)
        self._small_rows += frame.height
        if self._small_rows >= CHUNK_ROWS:
            self._flush_small()

    def _flush_rows(self) -> None:
        frame = self.rows.frame()
        if frame is not None:
            self._add(frame)

    def _flush_small(self) -> None:
        if self._small:
            small = self._small
            self.frames.append(pl.concat(small, rechunk=True) if len(small) > 1 else small[0])
            self._small, self._small_rows = [], 0


def trace_column(traces: tuple[str, ...]) -> pl.Expr | pl.Series:
    """The `trace` column of a chunk: a constant when one trace fills the chunk, else a run of
    repeats per trace; either way a name is stored once, not once per row."""
    runs = [(name, sum(1 for _ in group)) for name, group in groupby(traces)]
    if len(runs) == 1:
        return pl.lit(runs[0][0], dtype=pl.String).alias("trace")
    names = pl.Series("trace", [name for name, _ in runs], dtype=pl.String)
    index = array("I")
    for number, (_, count) in enumerate(runs):
        index.extend(repeat(number, count))
    return names.gather(pl.Series(index, dtype=pl.UInt32))


def is_header(raw: bytes) -> bool:
    """True for a line that is a v1 header (it starts a trace of its own after line 1)."""
    if b'"acp_trace"' not in raw:
        return False
    try:
        head = loads(raw)
    except ValueError:
        return False
    return isinstance(head, dict) and "acp_trace" in head and head.get("kind") == "header"


def parse_line(rows: Rows, trace: str, number: int, raw: bytes, *, header_ok: bool) -> None:
    """Add the rows of one line (`raw`, with its newline unless it is a cut last line); it is
    read as a header when it is one and `header_ok` (the first line of a trace)."""
    cut = not raw.endswith(b"\n")
    line = raw.rstrip(b"\r\n")
    if not line.strip():
        return
    try:
        rec = loads(line)
    except ValueError:
        rec = None
    if isinstance(rec, dict) and rec.get("kind") == "header":
        if header_ok:
            rows.add(trace=trace, line=number, kind="header", text=line.decode())
            return
        if "acp_trace" in rec:
            rows.headers.append(number)
    problem = record_problem(rec)
    if problem is not None:
        note = CUT if cut else problem
        text = line.decode("utf-8", errors="replace")
        rows.add(trace=trace, line=number, kind="malformed", event=note, text=text)
        return
    assert isinstance(rec, dict)
    if rec["src"] != "tap" and "msg" in rec:
        _add_messages(rows, trace, number, rec, line)
    else:
        _add_other(rows, trace, number, rec)


def _add_other(rows: Rows, trace: str, number: int, rec: dict[str, Any]) -> None:
    """A tap event, a text line or a b64 line."""
    base = {
        "trace": trace,
        "line": number,
        "seq": rec["seq"],
        "t_ns": rec.get("t_ns"),
        "src": rec["src"],
        "truncated": bool(rec.get("truncated", False)),
    }
    if rec["src"] == "tap":
        detail = {k: v for k, v in rec.items() if k not in ("seq", "t_ns", "src")}
        event = clean_text(rec["event"])
        rows.add(**base, kind="event", event=event, text=json_text(detail))
    elif "text" in rec:
        text = clean_text(rec["text"])
        size = rec.get("bytes") if base["truncated"] else len(text.encode())
        rows.add(**base, kind="text", text=text, bytes=size)
    else:
        size = rec.get("bytes") if base["truncated"] else len(base64.b64decode(rec["b64"]))
        rows.add(**base, kind="b64", text=rec["b64"], bytes=size)


def record_problem(rec: Any) -> str | None:
    """Why a parsed line is not a valid v1 record, or None when it is."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    seq, t_ns, src = rec.get("seq"), rec.get("t_ns"), rec.get("src")
    if not is_int64(seq):
        return "no integer `seq`"
    if t_ns is not None and not is_int64(t_ns):
        return "`t_ns` is not an integer"
    if rec.get("truncated") and not is_int64(rec.get("bytes")):
        return "a truncated record without an integer `bytes`"
    if src not in SOURCES:
        return f"unknown `src` {src!r}"
    if src == "tap":
        return None if isinstance(rec.get("event"), str) else "tap record without `event`"
    if ("msg" in rec) + ("text" in rec) + ("b64" in rec) != 1:
        return "a record needs exactly one of `msg`, `text`, `b64`"
    if "text" in rec and not isinstance(rec["text"], str):
        return "`text` is not a string"
    if "b64" in rec and not _is_b64(rec["b64"]):
        return "`b64` is not base64"
    return None


def is_int64(value: Any) -> bool:
    # `type() is int` leaves out bool; parsed JSON holds no other subclass of int.
    return type(value) is int and -(2**63) <= value < 2**63


def _is_b64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return True


def _add_messages(rows: Rows, trace: str, number: int, rec: dict[str, Any], line: bytes) -> None:
    """One row per message: the record's message, or each element of a batch."""
    value, seq, t_ns, src = rec["msg"], rec["seq"], rec.get("t_ns"), rec["src"]
    truncated = bool(rec.get("truncated", False))
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        text, _size = msg_text(line, rec)
        spans = element_spans(text.encode())
        for part, item in enumerate(value):
            data = spans[part] if len(spans) == len(value) else json_text(item).encode()
            element = data.decode()
            fields = fields_of(item, element)
            tail = (len(data), truncated, None, element, None)
            rows.rows.append((trace, number, seq, part, t_ns, src, *fields, *tail))
        return
    text, size = msg_text(line, rec)
    fields = fields_of(value, text)
    rows.rows.append(
        (trace, number, seq, None, t_ns, src, *fields, size, truncated, None, text, None)
    )


def fields_of(msg: Any, text: str) -> tuple[Any, ...]:
    """The columns derived from one message (`text` is its JSON text as written), in COLUMNS
    order: kind, id, method, session_id, update_kind, update_session, error_code,
    has_message_id, state, stop_reason, accepted."""
    kind = message_kind(msg)
    if kind == "invalid":
        return ("invalid", *(None,) * 10)
    method = msg.get("method")
    params = msg.get("params")
    error = msg.get("error")
    mid = _exact_id(msg, text) if "id" in msg else None
    session = error_code = None
    update_fields: tuple[Any, ...] = (None,) * 6
    if isinstance(params, dict):
        session = params.get("sessionId")
        update = params.get("update")
        if isinstance(update, dict):
            update_fields = _update_fields(update)
    if session is None:
        result = msg.get("result")
        session = result.get("sessionId") if isinstance(result, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        error_code = code if is_int64(code) else None
        data = error.get("data")
        if session is None and isinstance(data, dict):
            session = data.get("sessionId")
    if kind in ("response", "error"):
        result = msg.get("result")
        stop = as_str(result.get("stopReason")) if isinstance(result, dict) else None
        update_fields = (*update_fields[:4], stop, update_fields[5])
    method = clean_text(method) if isinstance(method, str) else None
    session = clean_text(session) if isinstance(session, str) else None
    return (kind, mid, method, session, *update_fields[:2], error_code, *update_fields[2:])


def _update_fields(update: dict[str, Any]) -> tuple[Any, ...]:
    """Of a session/update's `update`: update_kind, update_session, has_message_id, state,
    stop_reason, accepted."""
    uk, child = update.get("sessionUpdate"), update.get("sessionId")
    return (
        clean_text(uk) if isinstance(uk, str) else None,
        clean_text(child) if isinstance(child, str) else None,
        update.get("messageId") is not None,
        as_str(update.get("state")),
        as_str(update.get("stopReason")),
        accepted(update),
    )


def accepted(update: dict[str, Any]) -> bool:
    """The session-materialization `accepted` signal of claude-agent-acp (protocol-notes.md):
    `_meta["executablemd.session-materialization/v1"].state` is `accepted`."""
    meta = update.get("_meta")
    value = meta.get(ACCEPTANCE_META_KEY) if isinstance(meta, dict) else None
    return isinstance(value, dict) and value.get("state") == "accepted"


def _exact_id(msg: dict[str, Any], text: str) -> str:
    """The id's key; an id that orjson read as a float may be an integer beyond 64 bits, so its
    message is read again exactly."""
    value = msg["id"]
    if type(value) is float:
        try:
            exact = loads_exact(text)
        except ValueError:
            exact = None
        if isinstance(exact, dict) and "id" in exact:
            value = exact["id"]
    return id_key(value)
