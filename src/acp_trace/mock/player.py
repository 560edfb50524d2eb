"""Playing one window to the live client: the recorded lines at their recorded pace, rewritten.

Each recorded line is due at the time it came after its request in the recording, divided
by the speed, counted from when the live request arrived (0: as fast as possible). A line
that followed the client's answer to an agent request waits for the live client's answer,
and the clock then counts from that answer. The recorded session ids the client knows by
another id (`--session`) are renamed in `params.sessionId`, the response carries the live
request's id, agent requests get fresh ids; anything unchanged is sent byte for byte.

Lines recorded with the same time were read by the tap in one read: the agent wrote them
together. They are written together again (one write), so that a client cannot see the first
of them (a response) and send its next request before the rest (an update after the
response) are on their way: the tap then records them in the recorded order, however busy
the machine is.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from acp_trace.demo.rpc import ConnectionClosed, Endpoint
from acp_trace.demo.window import Crash, Pause, Reply, Step, Window, permission_params
from acp_trace.jsonrpc import INTERNAL_ERROR, REQUEST_CANCELLED, as_dict, as_str, id_key
from acp_trace.mock.recording import Line, dumps


class Stop(Exception):
    """The recording (or a fault) ends the agent here: exit with `code` (minus a signal)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code


class NoAnswer(Exception):
    """The client did not answer an agent request the recorded flow waits for."""


@dataclass
class _Clock:
    """When a recorded line is due: `live` (monotonic s) stands for `rec` (trace t_ns)."""

    speed: float
    live: float
    rec: int | None

    def due(self, t_ns: int | None) -> float | None:
        if self.speed == 0 or t_ns is None or self.rec is None:
            return None
        return self.live + (t_ns - self.rec) / 1e9 / self.speed

    def rebase(self, live: float, rec: int | None) -> None:
        if rec is not None:
            self.live, self.rec = live, rec


@dataclass(frozen=True)
class _Awaited:
    """An agent request sent to the client whose recorded answer later lines wait for."""

    answer_seq: int
    answer_t_ns: int | None
    live_id: Any
    method: str
    seq: int


class Player:
    """Plays windows on one endpoint, one at a time."""

    def __init__(
        self,
        rpc: Endpoint,
        errout: IO[bytes],
        *,
        speed: float,
        answer_timeout: float,
        log: Callable[[str], None],
    ) -> None:
        self.rpc = rpc
        self.errout = errout
        self.speed = speed
        self.answer_timeout = answer_timeout
        self.log = log
        self.protocol = 1  # the version of the connection, once initialize settled it
        self.rename: dict[str, str] = {}  # recorded session id -> the client's id for it
        self.cancelled: set[str] = set()  # id keys of live requests the client cancelled
        self.wake = threading.Event()  # set when a cancellation arrives
        self._live: Any = None
        self._awaited: list[_Awaited] = []
        self._held: list[bytes] = []  # lines to write together (recorded in one read)
        self._held_at: int | None = None  # their recorded time

    def play(self, window: Window, recorded_at: int | None, live_id: Any, arrived: float) -> None:
        """Send the window for the live request `live_id` that arrived at `arrived` (monotonic
        seconds); raises Stop when the recording or a fault ends the agent."""
        clock = _Clock(self.speed, arrived, recorded_at)
        self._live, self._awaited = live_id, []
        replied = False
        try:
            for action in window.sequence():
                if self.rpc.gone.is_set():
                    return  # the client is gone: nothing more to play to
                if not replied and id_key(live_id) in self.cancelled:
                    self._flush()
                    self.rpc.fail(live_id, REQUEST_CANCELLED, "request cancelled")
                    return
                if isinstance(action, Reply):
                    self._reply(action, clock, live_id)
                    replied = True
                elif isinstance(action, Pause):
                    self._flush()
                    seconds = max(action.draw(), 0.0)
                    self._sleep_until(time.monotonic() + seconds)
                    clock.live += seconds
                elif isinstance(action, Crash):
                    raise Stop(action.code)
                else:
                    self._step(action, clock)
        except NoAnswer as exc:
            self._flush()
            self.log(str(exc))
            if not replied:
                self.rpc.fail(live_id, INTERNAL_ERROR, f"acp-trace mock: {exc}")
        except ConnectionClosed:
            return  # the client went away while the flow waited for it
        finally:
            self._flush()  # what is held goes before the next request is read (or Stop ends)

    # ------------------------------------------------------------ one action

    def _reply(self, reply: Reply, clock: _Clock, live_id: Any) -> None:
        line = reply.item
        if reply.error is not None:
            self._flush()
            self.rpc.fail(live_id, *reply.error)
        elif isinstance(line, Line):
            self._when(line, clock)
            self._hold(self._render(line, live_id=live_id), line.t_ns)

    def _step(self, step: Step, clock: _Clock) -> None:
        line = step.item if isinstance(step.item, Line) else None
        if line is not None:
            self._when(line, clock)
            if line.kind == "end":
                raise Stop(line.code if line.code is not None else 1)
            if line.kind == "stderr":
                self._flush()  # stdout's lines before it go first, as recorded
                with contextlib.suppress(
                    OSError, ValueError
                ):  # stderr closed: not a reason to stop
                    self.errout.write(line.data + b"\n")
                    self.errout.flush()
                return
            if line.kind == "raw":
                self._hold(line.data + b"\n", line.t_ns)
                return
        if step.ask is not None:
            self._flush()
            self._ask(step, line)
        elif line is not None:
            self._hold(self._render(line, update=step.update), line.t_ns)
        else:  # a step a fault added: an update on the client's id for the session
            self._flush()
            params = {"sessionId": self._client_id(step.session), "update": step.update}
            notice = {"jsonrpc": "2.0", "method": "session/update", "params": params}
            self.rpc.send(dumps(notice) + b"\n")

    def _ask(self, step: Step, line: Line | None) -> None:
        """An agent request to the client, with a fresh id."""
        assert step.ask is not None
        if line is None:  # request-before-marker: the demo agent's request, answered at once
            params = permission_params(self._client_id(step.session) or "", self.protocol)
            live_id = self.rpc.start_request(step.ask, params)
            self._wait(_Awaited(-1, None, live_id, step.ask, -1))
            return
        params = dict(as_dict(line.msg.get("params")))
        session = as_str(params.get("sessionId"))
        if session is not None:
            params["sessionId"] = self._client_id(session)
        live_id = self.rpc.start_request(step.ask, params)
        if line.answer is not None:
            self._awaited.append(_Awaited(*line.answer, live_id, step.ask, line.seq))

    def _when(self, line: Line, clock: _Clock) -> None:
        """Wait for the answers the line came after in the recording, then for its time; a
        line recorded in one read with the held ones joins them at once (their time is its)."""
        answers = [a for a in self._awaited if a.answer_seq < line.seq]
        if self._held and not answers and line.t_ns is not None and line.t_ns == self._held_at:
            return
        self._flush()
        for awaited in answers:
            self._awaited.remove(awaited)
            self._wait(awaited)
            clock.rebase(time.monotonic(), awaited.answer_t_ns)
        due = clock.due(line.t_ns)
        if due is not None:
            self._sleep_until(due)

    def _wait(self, awaited: _Awaited) -> None:
        try:
            self.rpc.wait(awaited.live_id, self.answer_timeout)
        except TimeoutError:
            where = f" (recorded seq {awaited.seq})" if awaited.seq >= 0 else ""
            raise NoAnswer(
                f"no answer from the client to {awaited.method} request {awaited.live_id}"
                f"{where} within {self.answer_timeout:g} s: the recorded agent waited for it"
            ) from None

    def _hold(self, data: bytes, t_ns: int | None) -> None:
        """Keep a line to write with the next ones recorded at the same time (`_when` has
        written what was held before, unless this line joins it)."""
        self._held.append(data)
        self._held_at = t_ns

    def _flush(self) -> None:
        """Write the held lines in one write."""
        if self._held:
            data = b"".join(self._held)
            self._held.clear()
            self.rpc.send(data)

    def _sleep_until(self, due: float) -> None:
        """Sleep until `due` (inf: for ever), waking early only to honour a cancellation of the
        live request or because the client is gone."""
        while (delay := due - time.monotonic()) > 0:
            if self.wake.wait(min(delay, threading.TIMEOUT_MAX)):
                self.wake.clear()
                if id_key(self._live) in self.cancelled or self.rpc.gone.is_set():
                    return

    # ------------------------------------------------------------ rewriting

    def _client_id(self, session: str | None) -> str | None:
        return self.rename.get(session, session) if session is not None else None

    def _render(self, line: Line, *, update: Any = None, live_id: Any = None) -> bytes:
        """The line to send: as recorded when nothing changes, else re-encoded."""
        msg: dict[str, Any] = line.msg
        params = msg.get("params")
        changes: dict[str, Any] = {}
        if isinstance(params, dict):
            session = as_str(params.get("sessionId"))
            new_params = dict(params)
            if session is not None and self._client_id(session) != session:
                new_params["sessionId"] = self._client_id(session)
            if update is not None and update is not params.get("update"):
                new_params["update"] = update
            if any(new_params[k] is not params[k] for k in params):
                changes["params"] = new_params
        if live_id is not None and id_key(live_id) != id_key(msg.get("id")):
            changes["id"] = live_id
        if not changes:
            return line.data + b"\n"
        return dumps({**msg, **changes}) + b"\n"
