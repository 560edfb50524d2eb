"""The client side of a recording, as `acp-trace drive` plays it again.

A step is one message the recorded client sent (a request or a notification), in order, with
what it waited for: the requests whose responses the client had received before it sent the
step, and the v2 prompt turns that had ended (an idle `state_update`) by then. Its pacing is
the time the recorded client took after the last of those events (or its own previous
message). The client's answers to the agent's requests are kept per method, in order, to be
given again to the live agent's requests of the same method.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from acp_trace.errors import InputError
from acp_trace.jsonrpc import (
    as_dict,
    as_int,
    as_str,
    has_float_id,
    id_key,
    loads_message,
    message_kind,
)
from acp_trace.mock.recording import Record, read_records

SESSION_CREATORS = frozenset({"session/new", "session/fork"})
REPLAYING = frozenset({"session/load", "session/resume"})


@dataclass
class Step:
    """One message the recorded client sent."""

    index: int
    method: str
    params: Any
    recorded_id: Any = None  # None: a notification
    is_request: bool = True
    seq: int = 0
    t_ns: int | None = None
    after: tuple[int, ...] = ()  # request steps answered before this one was sent
    turns: tuple[int, ...] = ()  # v2 prompt steps whose turn had ended before it was sent
    think_ns: int = 0  # recorded time from the last of those events to this message
    reply: dict[str, Any] | None = None  # the recorded response (None: never answered)
    reply_t_ns: int | None = None
    turn_ended: bool = False  # a v2 prompt whose idle state_update was recorded

    @property
    def session(self) -> str | None:
        """The session the step names (`params.sessionId`), as recorded."""
        return as_str(as_dict(self.params).get("sessionId"))

    @property
    def recorded_error(self) -> int | None:
        """The code of the recorded error answer, else None."""
        error = as_dict(self.reply.get("error")) if self.reply is not None else {}
        return as_int(error.get("code")) if error else None

    @property
    def created_session(self) -> str | None:
        """The sessionId a recorded session/new or session/fork answer gave."""
        if self.method not in SESSION_CREATORS or self.reply is None:
            return None
        return as_str(as_dict(self.reply.get("result")).get("sessionId"))


@dataclass
class Script:
    """A recording's client side: its steps and its answers to agent requests."""

    name: str
    steps: list[Step] = field(default_factory=list)
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    left_out: Counter[str] = field(default_factory=Counter)
    other_traces: int = 0  # further traces in the file, not played

    @property
    def protocol(self) -> int | None:
        """The version the recorded initialize settled (its response, else its request)."""
        init = next((s for s in self.steps if s.method == "initialize"), None)
        if init is None:
            return None
        result = as_dict(init.reply.get("result")) if init.reply is not None else {}
        return as_int(result.get("protocolVersion")) or as_int(
            as_dict(init.params).get("protocolVersion")
        )


def load_script(path: Path) -> Script:
    """The client side of the first trace in `path`; InputError when it holds no client
    request at all (nothing to play)."""
    traces = read_records(path)
    name, records, left_out = traces[0]
    script = build_script(name, records)
    script.left_out = left_out
    script.other_traces = len(traces) - 1
    if not any(step.is_request for step in script.steps):
        raise InputError(f"{path}: no client request recorded, nothing to drive")
    if script.steps[0].method != "initialize":
        raise InputError(
            f"{path}: the recorded client starts with {script.steps[0].method}, "
            "expected initialize (a recording from the start of a connection)"
        )
    return script


class _Builder:
    """Walks one trace's records in order."""

    def __init__(self, name: str) -> None:
        self.script = Script(name)
        self.pending: dict[str, Step] = {}  # client request id -> step
        self.asks: dict[str, str] = {}  # agent request id -> method
        self.answered: list[int] = []
        self.turns_ended: list[int] = []
        self.last_event_ns: int | None = None
        self.open_turns: dict[str, Step] = {}  # session -> v2 prompt under way

    def client(self, rec: Record) -> None:
        kind = message_kind(rec.msg)
        if kind in ("request", "notification") and isinstance(rec.msg.get("method"), str):
            self._step(rec, kind == "request")
        elif kind in ("response", "error"):
            method = self.asks.pop(id_key(rec.msg.get("id")), None)
            if method is not None:
                self.script.answers.setdefault(method, []).append(rec.msg)

    def _step(self, rec: Record, is_request: bool) -> None:
        msg = rec.msg
        step = Step(
            index=len(self.script.steps),
            method=msg["method"],
            params=msg.get("params"),
            recorded_id=msg["id"] if is_request else None,
            is_request=is_request,
            seq=rec.seq,
            t_ns=rec.t_ns,
            after=tuple(self.answered),
            turns=tuple(self.turns_ended),
        )
        if rec.t_ns is not None and self.last_event_ns is not None:
            step.think_ns = max(0, rec.t_ns - self.last_event_ns)
        self._event(rec.t_ns)
        self.script.steps.append(step)
        if is_request:
            self.pending[id_key(step.recorded_id)] = step

    def agent(self, rec: Record) -> None:
        kind = message_kind(rec.msg)
        if kind in ("response", "error"):
            step = self.pending.pop(id_key(rec.msg.get("id")), None)
            if step is not None:
                step.reply, step.reply_t_ns = rec.msg, rec.t_ns
                self.answered.append(step.index)
                self._event(rec.t_ns)
                if step.method == "session/prompt" and "result" in rec.msg and self._v2():
                    self.open_turns[step.session or ""] = step
        elif kind == "request":
            self.asks[id_key(rec.msg["id"])] = str(rec.msg.get("method"))
        elif kind == "notification" and rec.msg.get("method") == "session/update":
            self._update(rec)

    def _update(self, rec: Record) -> None:
        params = as_dict(rec.msg.get("params"))
        update = as_dict(params.get("update"))
        if update.get("sessionUpdate") != "state_update" or update.get("state") != "idle":
            return
        step = self.open_turns.pop(as_str(params.get("sessionId")) or "", None)
        if step is not None:
            step.turn_ended = True
            self.turns_ended.append(step.index)
            self._event(rec.t_ns)

    def _v2(self) -> bool:
        return (self.script.protocol or 1) >= 2

    def _event(self, t_ns: int | None) -> None:
        if t_ns is not None:
            self.last_event_ns = max(t_ns, self.last_event_ns or t_ns)


def build_script(name: str, records: list[Record]) -> Script:
    """The script of one trace's records (in file order)."""
    builder = _Builder(name)
    for rec in records:
        if rec.msg is None:
            continue
        rec = exact_ids(rec)
        if rec.src == "client":
            builder.client(rec)
        elif rec.src == "agent":
            builder.agent(rec)
    return builder.script


def exact_ids(rec: Record) -> Record:
    """The record with its message read again with ids exact when one came out a float (an
    integer beyond 64 bits): the ids are compared with the analyzer's, which are exact."""
    if not has_float_id(rec.msg):
        return rec
    try:
        msg = loads_message(rec.data)
    except ValueError:
        return rec
    return replace(rec, msg=msg) if isinstance(msg, dict) else rec
