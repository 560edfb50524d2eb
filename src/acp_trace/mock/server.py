"""`acp-trace mock`: a stdio ACP agent that answers a live client from a recording.

`prepare` reads and checks everything before serving (an error there is the CLI's one line
and exit 2); `MockAgent.serve` then answers one request at a time, in order: `initialize`
picks the recorded connection of the highest version the client accepts, every other request
gets the recorded window of the same method on the same session at the same position (the
last one again once the recording has no more), played by `Player`.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from acp_trace.demo.faults import FaultSet, parse_faults
from acp_trace.demo.rpc import Endpoint, Message, watch_reader
from acp_trace.demo.window import Window, parse_gap
from acp_trace.errors import InputError, UsageError
from acp_trace.jsonrpc import (
    CANCEL_METHOD,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    air_opted_in,
    as_dict,
    as_int,
    as_str,
    id_key,
)
from acp_trace.mock.player import Player, Stop
from acp_trace.mock.recording import Connection, Cue, dumps, load_connections
from acp_trace.mock.windows import OTHER, prepared, step_of, with_air_event
from acp_trace.quantities import count

UNSUPPORTED_VERSION = -32022
MIN_SPEED, MAX_SPEED = 1e-6, 1e6
MAX_ANSWER_TIMEOUT = 1e9


@dataclass(frozen=True)
class MockOptions:
    """What to serve and how (the command's options)."""

    traces: tuple[str, ...]
    sessions: tuple[str, ...] = ()  # `RECORDED` (any other id) or `CLIENT=RECORDED`
    speed: float = 1.0  # 0: as fast as possible
    faults: tuple[str, ...] = ()
    gap: str | None = None  # extra wait at the end of each resume or load's replay
    seed: int = 0
    answer_timeout: float = 60.0  # seconds to wait for the client's answer to an agent request
    redact_content: bool = True  # replace credentials in free text (mock/scrub.py)
    air: bool = False  # send AIR's end-of-replay event to a client that asks (windows.py)


@dataclass(frozen=True)
class Mock:
    """A recording checked against the options, ready to serve."""

    options: MockOptions
    connections: list[Connection]
    faults: FaultSet
    default_session: str | None = None
    session_map: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what was left out reading the recording


def prepare(options: MockOptions) -> Mock:
    """Read the recording and check the options; raises InputError or UsageError."""
    speed, answer = options.speed, options.answer_timeout
    if not (speed == 0 or MIN_SPEED <= speed <= MAX_SPEED):  # NaN and inf fail this too
        raise UsageError(
            f"--speed {speed:g}: expected 0 (no waiting) or a factor from {MIN_SPEED:g} "
            f"(a recorded second takes 11.6 days) to {MAX_SPEED:g}"
        )
    if not (0 < answer <= MAX_ANSWER_TIMEOUT or answer == math.inf):
        raise UsageError(
            f"--answer-timeout {answer:g}: expected seconds above 0 and up to "
            f"{MAX_ANSWER_TIMEOUT:g}, or inf (wait as long as the client is there)"
        )
    try:
        faults = parse_faults(options.faults, mock=True)
        if options.gap is not None:
            parse_gap(options.gap)
    except ValueError as exc:
        raise UsageError(f"mock: {exc}") from exc
    connections = [
        c
        for c in load_connections(options.traces, redact_content=options.redact_content)
        if c.cues or c.prologue
    ]
    where = ", ".join(options.traces)
    if not any(c.has_agent_side() for c in connections):
        raise InputError(f"{where}: no message from the agent: a mock serves the agent's side")
    served = [c for c in connections if c.has_agent_side() and _initialized(c)]
    if not served:
        raise InputError(f"{where}: no initialize answered by the agent: nothing to negotiate with")
    skipped = [
        f"{c.name}: not served (no initialize answered by the agent)"
        for c in connections
        if c not in served
    ]
    known = {s for c in served for s in c.sessions}
    default, mapping = _session_options(options.sessions, known)
    notes = tuple(
        skipped
        + [
            f"{c.name}: left out {count(number)} {what}"
            for c in served
            for what, number in c.left_out.items()
        ]
    )
    return Mock(options, served, faults, default, mapping, notes)


def _initialized(conn: Connection) -> bool:
    return conn.initialize is not None and conn.initialize.reply is not None


def _session_options(specs: tuple[str, ...], known: set[str]) -> tuple[str | None, dict[str, str]]:
    default: str | None = None
    mapping: dict[str, str] = {}
    for spec in specs:
        client, eq, recorded = spec.rpartition("=")
        if recorded not in known:
            holds = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"--session {spec}: the recording holds no session {recorded!r} (it holds {holds})"
            )
        if eq:
            mapping[client] = recorded
        elif default is not None and default != recorded:
            raise UsageError(f"--session {spec}: a second default session after {default!r}")
        else:
            default = recorded
    return default, mapping


class MockAgent:
    """Serves one connection from a prepared recording."""

    def __init__(self, mock: Mock, reader: IO[bytes], writer: IO[bytes], errout: IO[bytes]) -> None:
        self.mock = mock
        self.errout = errout
        self.rpc = Endpoint(reader, writer, self._intercept)
        opts = mock.options
        self.player = Player(
            self.rpc, errout, speed=opts.speed, answer_timeout=opts.answer_timeout, log=self.log
        )
        self.conn: Connection = mock.connections[0]
        self.count: Counter[tuple[str, str | None, bool]] = Counter()  # method, session, replays
        self._arrived: dict[int, float] = {}
        self.ready = time.monotonic()
        self.air_client = False  # the client asked for AIR's end-of-replay event (initialize)
        gap, rng = (parse_gap(opts.gap) if opts.gap else None), random.Random(opts.seed)
        self.pause: Callable[[], float] | None = (lambda: gap(rng)) if gap else None

    def log(self, text: str) -> None:
        """One line on stderr (none when stderr is closed)."""
        with contextlib.suppress(OSError, ValueError):
            self.errout.write(f"acp-trace mock: {text}\n".encode())
            self.errout.flush()

    def serve(self) -> int:
        """Answer requests until the client closes stdin (0) or the recording ends the agent."""
        for note in self.mock.notes:
            self.log(note)
        self.ready = time.monotonic()
        self.rpc.start()
        stop_watching = watch_reader(self.rpc.writer_fd(), self._client_gone)
        try:
            self.player.play(
                Window("", OTHER, [step_of(x) for x in self.conn.prologue]),
                None,
                None,
                time.monotonic(),
            )
            while not self.rpc.gone.is_set() and (msg := self.rpc.inbox.get()) is not None:
                self._handle(msg, self._arrived.pop(id(msg), time.monotonic()))
        except Stop as stop:
            return stop.code
        finally:
            stop_watching()
        if self.rpc.gone.is_set():
            self.log("the client stopped reading: nothing more is sent")
        return 0

    def _client_gone(self) -> None:
        """Watcher thread: the client closed its end of stdout; stop writing, waiting and
        sleeping at once."""
        self.rpc.abandon()
        self.player.wake.set()

    def _intercept(self, msg: Message) -> bool:
        """Reader thread: cancellations at once; every other message timed and queued."""
        if msg.get("method") == CANCEL_METHOD:
            self.player.cancelled.add(id_key(as_dict(msg.get("params")).get("requestId")))
            self.player.wake.set()
            return True
        self._arrived[id(msg)] = time.monotonic()
        return False

    def _handle(self, msg: Message, arrived: float) -> None:
        if "_unparseable" in msg:
            self.rpc.fail(None, PARSE_ERROR, "parse error: the line is not JSON")
            return
        method, params = msg.get("method"), as_dict(msg.get("params"))
        if "id" not in msg or not isinstance(method, str):
            return  # notifications (session/cancel, ...) are not answered
        if method == "initialize":
            self._initialize(msg["id"], params, arrived)
        else:
            self._request(msg["id"], method, params, arrived)

    def _initialize(self, rid: Any, params: dict[str, Any], arrived: float) -> None:
        asked = as_int(params.get("protocolVersion"))
        self.air_client = air_opted_in(params)
        if asked is None:
            self.rpc.fail(rid, INVALID_PARAMS, "initialize: expected an integer protocolVersion")
            return
        versions = sorted({c.protocol or 1 for c in self.mock.connections})
        fitting = [c for c in self.mock.connections if (c.protocol or 1) <= asked]
        if not fitting:
            text = (
                f"unsupported protocol version {asked}: the recording holds version "
                f"{', '.join(map(str, versions))} only"
            )
            error = {
                "code": UNSUPPORTED_VERSION,
                "message": text,
                "data": {"requested": asked, "supported": versions},
            }
            self.rpc.send(dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n")
            return
        best = max(c.protocol or 1 for c in fitting)
        self.conn = next(c for c in fitting if (c.protocol or 1) == best)
        self.player.protocol = best
        if arrived - self.ready < _WAITING:  # sent before the mock was up, like the recorded
            arrived = min(arrived, process_start())  # agent's start: its delay counts from there
        self._play(rid, arrived, self.conn.cues_for("initialize", None))

    def _request(self, rid: Any, method: str, params: dict[str, Any], arrived: float) -> None:
        live = as_str(params.get("sessionId"))
        recorded = self._recorded_session(live) if live is not None else None
        if live is not None and recorded is None:
            text = (
                f"unknown session {live}: the recording {self.conn.name} holds "
                f"{', '.join(self.conn.sessions) or 'none'} (--session maps other ids)"
            )
            error = {"code": RESOURCE_NOT_FOUND, "message": text, "data": {"sessionId": live}}
            self.rpc.send(dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n")
            return
        cues = _same_kind(self.conn.cues_for(method, recorded), params)
        if not cues:
            where = f" for session {recorded}" if recorded else ""
            self.rpc.fail(
                rid,
                METHOD_NOT_FOUND,
                f"method not found: the recording holds no "
                f"{method}{where} (it holds {holdings(self.conn)})",
            )
            return
        if live is not None and recorded is not None and live != recorded:
            self.player.rename[recorded] = live
        self._play(rid, arrived, cues)

    def _recorded_session(self, live: str) -> str | None:
        if live in self.mock.session_map:
            return self.mock.session_map[live]
        if live in self.conn.sessions:
            return live
        return self.mock.default_session

    def _play(self, rid: Any, arrived: float, cues: list[Cue]) -> None:
        """The next of these recorded cues (the last one again when none is left)."""
        first = cues[0]
        key = (first.method, first.session, _replaying(first.params))
        n = self.count[key]
        self.count[key] += 1
        if n == len(cues):
            what = f"{first.method}" + (f" of {first.session}" if first.session else "")
            self.log(
                f"the recording holds {count(len(cues))} {what}: request {rid} and later ones "
                "get the last one again"
            )
        cue = cues[min(n, len(cues) - 1)]
        window = prepared(cue, self.conn.protocol, self.mock.faults, self.pause)
        if self.mock.options.air and self.air_client:
            window = with_air_event(window, cue)
        self.player.play(window, cue.t_ns, rid, arrived)


_WAITING = 0.02  # a request read this soon after the mock was ready was waiting for it


def process_start() -> float:
    """When this process started, on the time.monotonic clock (Linux; else: now)."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(age, 0.0)


def holdings(conn: Connection, most: int = 8) -> str:
    """What a recording answers: `initialize, session/resume of S (2), ...`."""
    counts = Counter((c.method, c.session) for c in conn.cues)
    items = [
        f"{m}" + (f" of {s}" if s else "") + (f" ({count(n)})" if n > 1 else "")
        for (m, s), n in counts.items()
    ]
    more = f" and {count(len(items) - most)} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more


def run_mock(mock: Mock, reader: IO[bytes], writer: IO[bytes], errout: IO[bytes]) -> int:
    """Serve until the client closes stdin; returns the exit code (minus a signal number when
    the recorded agent was killed by one)."""
    return MockAgent(mock, reader, writer, errout).serve()


def _replaying(params: dict[str, Any]) -> bool:
    """A `session/resume` with a cursor (it replays), as against one that opens a session."""
    return params.get("replayFrom") is not None


def _same_kind(cues: list[Cue], params: dict[str, Any]) -> list[Cue]:
    """The recorded cues a request gets: a resume with a cursor the recorded ones with a
    cursor, a resume without one those without (a client that opens a session, prompts, then
    replays it, as the demo client does), when the recording holds that kind; else all."""
    same = [c for c in cues if _replaying(c.params) == _replaying(params)]
    return same or cues
