"""Reading traces of format v1 (docs/trace-format.md); trace_format.py writes them.

The reader turns one or more trace files into one flat polars DataFrame with a row per
message (a batch line gives one row per element), per text line, per tap event, per header
and per damaged line. Nothing is dropped silently: damaged lines become `malformed` rows.
"""

from __future__ import annotations

import base64
import mmap
import os
import re
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby, repeat
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import polars as pl

from acp_trace.errors import InputError
from acp_trace.jsonrpc import id_key, is_message, loads, message_kind
from acp_trace.trace.format import FORMAT_VERSION, SOURCES, element_spans, msg_text
from acp_trace.trace.paths import Found, find_traces

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
    "bytes": pl.Int64,
    "truncated": pl.Boolean,
    "event": pl.String,
    "msg": pl.String,
    "text": pl.String,
}
COLUMNS = tuple(SCHEMA)

# ---------------------------------------------------------------- reading


class _Columns:
    """The table being read: finished chunks, and the rows (tuples in COLUMNS order) of the
    chunk being filled. Chunks span files, so many small traces cost no more than one."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.frames: list[pl.DataFrame] = []

    def add(self, **values: Any) -> None:
        self.rows.append(tuple(values.get(name) for name in COLUMNS))

    def flush(self) -> None:
        """Turn the pending rows into a DataFrame chunk."""
        if self.rows:
            traces, *columns = zip(*self.rows, strict=True)
            data = dict(zip(COLUMNS[1:], columns, strict=True))
            self.rows = []
            frame = pl.DataFrame(data, schema={k: SCHEMA[k] for k in COLUMNS[1:]})
            self.frames.append(frame.with_columns(_trace_column(traces)).select(COLUMNS))

    def table(self) -> pl.DataFrame:
        """All rows read, in order (the chunks are kept: no copy of the whole table)."""
        self.flush()
        if not self.frames:
            return pl.DataFrame(schema=SCHEMA)
        return pl.concat(self.frames, rechunk=False)


def _trace_column(traces: tuple[str, ...]) -> pl.Expr | pl.Series:
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


def read_trace(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """Read traces (files, directories, globs) into one records DataFrame (see COLUMNS).

    Other capture formats (bare JSON-RPC, Zed's log, conductor, inspector) are detected
    from their content and converted on the fly. Damaged lines and a cut last line become
    rows of kind `malformed` with their line number; they never stop the reading. A file
    found in a directory (or by a glob) that is not a trace becomes one row of kind `skipped`
    that says why (`skipped_inputs` lists them); a file named itself that is not a trace, or
    an argument that yields no trace at all, raises InputError. A file holding several traces
    one after another (each from its header on) is read as `FILE#1`, `FILE#2`, ...
    `fmt` names the input format instead of detecting it (`acp-trace`, or an importer's name).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found = find_traces(paths)
    table = read_found(found, fmt=fmt, progress=progress)
    check_roots(found, skipped_inputs(table))
    return table


def read_found(
    found: Sequence[Found],
    *,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """Read the files `find_traces` found (or a share of them: the fleet reads a partition per
    worker): one records table, a `skipped` row for each candidate that is no trace.
    InputError for an explicit file that is no trace; `check_roots` does the rest."""
    cols = _Columns()
    for done, item in enumerate(found, 1):
        try:
            _read_file(cols, item.path, fmt)
        except InputError as exc:
            if item.explicit:
                raise
            cols.add(trace=str(item.path), kind="skipped", event=_reason(exc, item.path))
        if progress is not None:
            progress(done, len(found))
    return cols.table()


def check_roots(found: Sequence[Found], skipped: pl.DataFrame) -> None:
    """InputError for the first argument all of whose files were skipped (`skipped`: the
    `skipped_inputs` table of what was read)."""
    problems = dict(skipped.select("trace", "problem").iter_rows())
    by_root: dict[str, list[str]] = {}
    for item in found:
        by_root.setdefault(item.root, []).append(str(item.path))
    for root, files in by_root.items():
        if all(f in problems for f in files):
            rows = pl.DataFrame({"trace": files, "problem": [problems[f] for f in files]})
            raise InputError(_nothing_read(root, rows))


def skipped_inputs(records: pl.DataFrame) -> pl.DataFrame:
    """The files passed over while reading (`trace`, `problem`), in order."""
    skipped = records.filter(pl.col("kind") == "skipped")
    return skipped.select("trace", pl.col("event").alias("problem"))


def _reason(exc: InputError, path: Path) -> str:
    """The reason of an InputError without the path it starts with."""
    return str(exc).removeprefix(f"{path}: ")


def _nothing_read(root: str, problems: pl.DataFrame) -> str:
    skipped = problems.rows()
    shown = "; ".join(f"{Path(t).name}: {p}" for t, p in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    files = "1 file" if len(skipped) == 1 else f"{len(skipped)} files"
    return f"{root}: no trace among its {files} ({shown}{more})"


CHUNK_ROWS = 50_000


def _read_file(cols: _Columns, path: Path, fmt: str | None) -> None:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    with handle:
        first = handle.readline()
        if fmt in (None, "acp-trace") and _is_native(first):
            handle.seek(0)
            if _later_header(handle):
                _parse_segments(cols, str(path), handle)
            else:
                _parse_lines(cols, str(path), handle)
            return
        handle.seek(0)
        data = handle.read()
    from acp_trace.trace import importers  # imported late: only other formats need it

    for name, lines in importers.convert(path, data, fmt):
        _parse_lines(cols, name, iter(lines))


_HEADER_KEY = re.compile(rb'(?<!\\)"acp_trace"')


def _later_header(handle: BinaryIO) -> bool:
    """True when a header key stands after line 1 (`cat a.jsonl b.jsonl`); leaves the handle at
    the start. A quick scan of the bytes: `_parse_segments` decides line by line."""
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        return False
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        start = data.find(b"\n") + 1
        found = start > 0 and _HEADER_KEY.search(data, start) is not None
    handle.seek(0)
    return found


def _parse_segments(cols: _Columns, path: str, lines: Iterable[bytes]) -> None:
    """A file of several traces: each header starts the next, named `PATH#1`, `PATH#2`, ..."""
    segment = 1
    for number, raw in enumerate(lines, 1):
        header = b'"acp_trace"' in raw and _is_header(raw)
        segment += header and number > 1
        _parse_line(cols, f"{path}#{segment}", number, raw, header_ok=header)
        if len(cols.rows) >= CHUNK_ROWS:
            cols.flush()


def _is_header(raw: bytes) -> bool:
    try:
        head = loads(raw)
    except ValueError:
        return False
    return isinstance(head, dict) and "acp_trace" in head and head.get("kind") == "header"


def _is_native(line: bytes) -> bool:
    """A v1 header, or (a trace written by hand without one) a valid v1 record."""
    try:
        head = loads(line)
    except ValueError:
        return False
    if isinstance(head, dict) and head.get("acp_trace") == FORMAT_VERSION:
        return True
    return _record_problem(head) is None


def _parse_lines(cols: _Columns, trace: str, lines: Iterable[bytes]) -> None:
    """Add the rows of the lines of one native trace."""
    for number, raw in enumerate(lines, 1):
        _parse_line(cols, trace, number, raw)
        if len(cols.rows) >= CHUNK_ROWS:
            cols.flush()


def _parse_line(
    cols: _Columns, trace: str, number: int, raw: bytes, *, header_ok: bool = False
) -> None:
    cut = not raw.endswith(b"\n")
    line = raw.rstrip(b"\r\n")
    if not line.strip():
        return
    try:
        rec = loads(line)
    except ValueError:
        rec = None
    if (number == 1 or header_ok) and isinstance(rec, dict) and rec.get("kind") == "header":
        cols.add(trace=trace, line=number, kind="header", text=line.decode())
        return
    problem = _record_problem(rec)
    if problem is not None:
        note = "the last line is cut (no newline at the end)" if cut else problem
        text = line.decode("utf-8", errors="replace")
        cols.add(trace=trace, line=number, kind="malformed", event=note, text=text)
        return
    assert isinstance(rec, dict)
    if rec["src"] != "tap" and "msg" in rec:
        _add_messages(cols, trace, number, rec, line)
    else:
        _add_other(cols, trace, number, rec)


def _add_other(cols: _Columns, trace: str, number: int, rec: dict[str, Any]) -> None:
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
        cols.add(**base, kind="event", event=rec["event"], text=orjson.dumps(detail).decode())
    elif "text" in rec:
        size = rec.get("bytes") if base["truncated"] else len(rec["text"].encode())
        cols.add(**base, kind="text", text=rec["text"], bytes=size)
    else:
        size = rec.get("bytes") if base["truncated"] else len(base64.b64decode(rec["b64"]))
        cols.add(**base, kind="b64", text=rec["b64"], bytes=size)


def _record_problem(rec: Any) -> str | None:
    """Why a parsed line is not a valid v1 record, or None when it is."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    seq, t_ns, src = rec.get("seq"), rec.get("t_ns"), rec.get("src")
    if not _is_int64(seq):
        return "no integer `seq`"
    if t_ns is not None and not _is_int64(t_ns):
        return "`t_ns` is not an integer"
    if rec.get("truncated") and not _is_int64(rec.get("bytes")):
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


def _is_int64(value: Any) -> bool:
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


def _add_messages(
    cols: _Columns, trace: str, number: int, rec: dict[str, Any], line: bytes
) -> None:
    """One row per message: the record's message, or each element of a batch."""
    value, seq, t_ns, src = rec["msg"], rec["seq"], rec.get("t_ns"), rec["src"]
    truncated = bool(rec.get("truncated", False))
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        text, _size = msg_text(line, rec)
        spans = element_spans(text.encode())
        for part, item in enumerate(value):
            data = spans[part] if len(spans) == len(value) else orjson.dumps(item)
            fields = _fields(item)
            tail = (len(data), truncated, None, data.decode(), None)
            cols.rows.append((trace, number, seq, part, t_ns, src, *fields, *tail))
        return
    text, size = msg_text(line, rec)
    fields = _fields(value)
    cols.rows.append(
        (trace, number, seq, None, t_ns, src, *fields, size, truncated, None, text, None)
    )


def _fields(msg: Any) -> tuple[Any, ...]:
    """The columns derived from one message, in COLUMNS order: kind, id, method, session_id,
    update_kind, update_session, error_code."""
    kind = message_kind(msg)
    if kind == "invalid":
        return ("invalid", None, None, None, None, None, None)
    method = msg.get("method")
    params = msg.get("params")
    error = msg.get("error")
    mid = id_key(msg["id"]) if "id" in msg else None
    session = update_kind = update_session = error_code = None
    if isinstance(params, dict):
        session = params.get("sessionId")
        update = params.get("update")
        if isinstance(update, dict):
            uk = update.get("sessionUpdate")
            update_kind = uk if isinstance(uk, str) else None
            child = update.get("sessionId")
            update_session = child if isinstance(child, str) else None
    if session is None:
        result = msg.get("result")
        session = result.get("sessionId") if isinstance(result, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        error_code = code if _is_int64(code) else None
        data = error.get("data")
        if session is None and isinstance(data, dict):
            session = data.get("sessionId")
    method = method if isinstance(method, str) else None
    session = session if isinstance(session, str) else None
    return (kind, mid, method, session, update_kind, update_session, error_code)


def headers(records: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Each trace's header fields (an empty dict when the trace has no header)."""
    out: dict[str, dict[str, Any]] = {t: {} for t in records["trace"].unique(maintain_order=True)}
    for trace, text in records.filter(pl.col("kind") == "header").select("trace", "text").rows():
        out[trace] = loads(text)
    return out
