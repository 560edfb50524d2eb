"""A recording as `acp-trace mock` serves it: each trace a connection, each client request a cue.

A cue is one request the recorded client sent and what the agent sent from then until the
client's next request: notifications, agent requests (with where the client's answer came),
lines that are not JSON, stderr lines, the response to the cue's own request (wherever it
came), and the end of the agent when it went away by itself. Trace format v1 is read line by
line with orjson (no polars: the mock is an agent an editor starts, it must start fast); other
capture formats go through the library's reader.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import (
    as_dict,
    as_int,
    as_str,
    id_key,
    is_message,
    json_bytes,
    loads,
    message_kind,
)
from acp_trace.trace.format import FORMAT_VERSION, SOURCES, element_spans, msg_text


@dataclass
class Line:
    """One thing the agent side wrote, as recorded.

    kind `msg` (a JSON-RPC message: `data` its text as written, `msg` parsed), `raw` (a stdout
    line that is not JSON), `stderr`, or `end` (the agent closed its stdout, with its exit
    `code`, or minus the signal that ended it).
    """

    seq: int
    t_ns: int | None
    kind: str
    data: bytes = b""
    msg: Any = None
    code: int | None = None
    answer: tuple[int, int | None] | None = (
        None  # an agent request: the client's answer (seq, t_ns)
    )


@dataclass
class Cue:
    """A request the recorded client sent, with the agent's lines that belong to it."""

    method: str
    id: Any
    params: dict[str, Any]
    seq: int
    t_ns: int | None
    lines: list[Line] = field(default_factory=list)
    reply: Line | None = None

    @property
    def session(self) -> str | None:
        """The session the request names (`params.sessionId`)."""
        return as_str(self.params.get("sessionId"))


@dataclass
class Connection:
    """One recorded connection: its cues in order and what was left out reading it."""

    name: str
    cues: list[Cue] = field(default_factory=list)
    prologue: list[Line] = field(default_factory=list)  # agent lines before any request
    left_out: Counter[str] = field(default_factory=Counter)

    @property
    def initialize(self) -> Cue | None:
        """The first answered initialize, else the first one."""
        inits = [c for c in self.cues if c.method == "initialize"]
        return next((c for c in inits if c.reply is not None), inits[0] if inits else None)

    @property
    def protocol(self) -> int | None:
        """The version the recorded initialize settled (its response, else its request)."""
        init = self.initialize
        if init is None:
            return None
        result = as_dict(init.reply.msg.get("result")) if init.reply is not None else {}
        return as_int(result.get("protocolVersion")) or as_int(init.params.get("protocolVersion"))

    @property
    def sessions(self) -> list[str]:
        """The session ids the recording's requests name or its session/new answers give."""
        out: dict[str, None] = {}
        for cue in self.cues:
            if cue.session is not None:
                out[cue.session] = None
            result = as_dict(cue.reply.msg.get("result")) if cue.reply is not None else {}
            if as_str(result.get("sessionId")) is not None:
                out[result["sessionId"]] = None
        return list(out)

    def has_agent_side(self) -> bool:
        """True when the agent wrote anything at all on stdout."""
        lines = [*self.prologue, *(line for cue in self.cues for line in cue.lines)]
        return any(line.kind in ("msg", "raw") for line in lines)

    def cues_for(self, method: str, session: str | None) -> list[Cue]:
        """The recorded requests of `method` on `session` (None: requests naming none)."""
        return [c for c in self.cues if c.method == method and c.session == session]


@dataclass(frozen=True)
class Record:
    """One record of a trace, whatever its format: a message, a line of text, a tap event."""

    seq: int
    t_ns: int | None
    src: str
    data: bytes = b""
    msg: Any = None  # a parsed JSON-RPC message (None: the line is not one)
    event: dict[str, Any] | None = None


# ---------------------------------------------------------------- reading


def scrub(records: list[Record]) -> list[Record]:
    """The records with credentials in free text replaced (mock/scrub.py); unchanged records
    are kept as they are."""
    from acp_trace.mock.scrub import Lines, message_data

    lines, out = Lines(), []
    for rec in records:
        data = None
        if rec.msg is not None and rec.event is None:
            data = message_data(rec.data, rec.msg)
        elif rec.event is None:
            data = lines.text(rec.src, rec.data)
        out.append(rec if data is None else replace(rec, data=data))
    return out


def load_connections(
    paths: Iterable[str | Path], *, redact_content: bool = True
) -> list[Connection]:
    """Every trace in the files, in order (a file of concatenated traces gives several); with
    credentials in free text replaced (mock/scrub.py) unless `redact_content` is false."""
    out: list[Connection] = []
    for path in (Path(p).expanduser() for p in paths):  # editors pass args without a shell
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        traces = _split_native(str(path), data) if _is_native(data) else _imported(path)
        out.extend(
            build(name, scrub(records) if redact_content else records, left_out)
            for name, records, left_out in traces
        )
    return out


def read_records(path: Path) -> list[Trace]:
    """The traces of one file, each its name, its records (both directions, tap events) in
    file order, and what was left out reading it (`acp-trace drive` plays the client side)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    return _split_native(str(path), data) if _is_native(data) else _imported(path)


def _is_native(data: bytes) -> bool:
    first = next((line for line in data.splitlines() if line.strip()), b"")
    try:
        head = loads(first)
    except ValueError:
        return False
    return isinstance(head, dict) and (
        head.get("acp_trace") == FORMAT_VERSION or ("seq" in head and head.get("src") in SOURCES)
    )


Trace = tuple[str, list[Record], Counter[str]]


def _split_native(path: str, data: bytes) -> list[Trace]:
    """The traces of a v1 file (`PATH#N` when it holds several), their records and what was
    left out (damaged lines, lines recorded cut)."""
    traces: list[Trace] = []
    records: list[Record] = []
    left_out: Counter[str] = Counter()
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except ValueError:
            left_out["damaged lines"] += 1
            continue
        if isinstance(rec, dict) and rec.get("kind") == "header" and "acp_trace" in rec:
            if records or left_out:
                traces.append((path, records, left_out))
            records, left_out = [], Counter()
            continue
        problem = _problem(rec)
        if problem is not None:
            left_out[problem] += 1
            continue
        records.extend(_native_records(line, rec))
    traces.append((path, records, left_out))
    if len(traces) > 1:
        traces = [(f"{path}#{i}", r, c) for i, (_, r, c) in enumerate(traces, 1)]
    return traces


def _problem(rec: Any) -> str | None:
    if not isinstance(rec, dict) or as_int(rec.get("seq")) is None:
        return "damaged lines"
    if rec.get("src") not in SOURCES or (
        rec.get("t_ns") is not None and as_int(rec["t_ns"]) is None
    ):
        return "damaged lines"
    if rec.get("truncated"):
        return "lines recorded cut (--max-record-bytes)"
    if rec["src"] != "tap" and sum(k in rec for k in ("msg", "text", "b64")) != 1:
        return "damaged lines"
    return None


def _native_records(line: bytes, rec: dict[str, Any]) -> Iterator[Record]:
    seq, t_ns, src = rec["seq"], rec.get("t_ns"), rec["src"]
    if src == "tap":
        yield Record(seq, t_ns, src, event=rec)
    elif "msg" in rec:
        text = msg_text(line, rec)[0].encode()
        value = rec["msg"]
        if isinstance(value, list) and value and all(is_message(m) for m in value):
            spans = element_spans(text)
            for i, item in enumerate(value):  # a batch: its elements, one by one
                part = spans[i] if len(spans) == len(value) else dumps(item)
                yield Record(seq, t_ns, src, part, item)
        else:
            yield Record(seq, t_ns, src, text, value if is_message(value) else None)
    elif "text" in rec:
        yield Record(seq, t_ns, src, str(rec["text"]).encode())
    else:
        yield Record(seq, t_ns, src, base64.b64decode(str(rec["b64"])))


def _imported(path: Path) -> list[Trace]:
    """Another tool's capture, through the library's reader (polars, loaded only here)."""
    from acp_trace.trace.reader import read_trace

    table = read_trace(path)
    traces: dict[str, Trace] = {}
    for row in table.iter_rows(named=True):
        _, records, left_out = traces.setdefault(row["trace"], (row["trace"], [], Counter()))
        kind = row["kind"]
        if kind in ("header", "skipped"):
            continue
        if kind == "malformed" or row["seq"] is None:
            left_out["damaged lines"] += 1
        elif kind == "event":
            event = {"event": row["event"], **as_dict(loads(row["text"] or "{}"))}
            records.append(Record(row["seq"], row["t_ns"], "tap", event=event))
        elif kind in ("text", "b64"):
            raw = row["text"].encode() if kind == "text" else base64.b64decode(row["text"])
            records.append(Record(row["seq"], row["t_ns"], row["src"], raw))
        else:
            msg = loads(row["msg"]) if row["msg"] else None
            records.append(Record(row["seq"], row["t_ns"], row["src"], row["msg"].encode(), msg))
    return list(traces.values())


def dumps(value: Any) -> bytes:
    """Compact JSON (`jsonrpc.json_bytes`: huge integers exact, lone surrogates escaped)."""
    return json_bytes(value)


# ---------------------------------------------------------------- cues


def build(name: str, records: list[Record], left_out: Counter[str] | None = None) -> Connection:
    """The connection of one trace's records (in file order)."""
    conn = Connection(name, left_out=left_out or Counter())
    pending: dict[str, Cue] = {}  # client request id -> its cue, until answered
    asks: dict[str, Line] = {}  # agent request id -> its line, until the client answers
    state = {"client_closed": False}
    end: list[Line] = []
    for rec in records:
        if rec.src == "client":
            _client(conn, rec, pending, asks)
        elif rec.src == "tap":
            _event(conn, rec, state, end)
        elif not end:
            _agent(conn, rec, pending, asks)
    return conn


def _target(conn: Connection) -> list[Line]:
    return conn.cues[-1].lines if conn.cues else conn.prologue


def _client(conn: Connection, rec: Record, pending: dict[str, Cue], asks: dict[str, Line]) -> None:
    kind = message_kind(rec.msg)
    if kind == "request" and isinstance(rec.msg.get("method"), str):
        params = as_dict(rec.msg.get("params"))
        cue = Cue(rec.msg["method"], rec.msg["id"], params, rec.seq, rec.t_ns)
        conn.cues.append(cue)
        pending[id_key(cue.id)] = cue
    elif kind in ("response", "error"):
        ask = asks.pop(id_key(rec.msg.get("id")), None)
        if ask is not None:
            ask.answer = (rec.seq, rec.t_ns)


def _agent(conn: Connection, rec: Record, pending: dict[str, Cue], asks: dict[str, Line]) -> None:
    if rec.src == "stderr":
        _target(conn).append(Line(rec.seq, rec.t_ns, "stderr", rec.data))
        return
    if rec.msg is None:
        _target(conn).append(Line(rec.seq, rec.t_ns, "raw", rec.data))
        return
    line = Line(rec.seq, rec.t_ns, "msg", rec.data, rec.msg)
    kind = message_kind(rec.msg)
    cue = pending.pop(id_key(rec.msg["id"]), None) if kind in ("response", "error") else None
    if cue is not None:
        cue.reply = line
        cue.lines.append(line)  # with its own request, even when another came in between
        return
    if kind == "request":
        asks[id_key(rec.msg["id"])] = line
    _target(conn).append(line)


def _event(conn: Connection, rec: Record, state: dict[str, bool], end: list[Line]) -> None:
    """The agent going away before the client closed its stdin is part of the recording."""
    event = rec.event or {}
    name = event.get("event")
    if name == "eof" and event.get("stream") == "client":
        state["client_closed"] = True
    elif name in ("eof", "exit") and not state["client_closed"]:
        if not end and (name == "exit" or event.get("stream") == "agent"):
            end.append(Line(rec.seq, rec.t_ns, "end", code=1))
            _target(conn).append(end[0])
        if name == "exit" and end:
            code, signal = as_int(event.get("code")), as_int(event.get("signal"))
            end[0].code = code if code is not None else -(signal or 1)
