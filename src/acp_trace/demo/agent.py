"""A reference ACP agent over stdio (v1 and v2) with a fabricated history and injectable faults.

`acp-trace demo-agent` serves initialize, session/new, session/prompt (echo), v1 session/load
and session/resume, v2 session/resume with `replayFrom: {"type": "start"}` (replay, children,
`replay_complete`, then a `state_update` snapshot, then the response). Its correct traffic
matches the official ACP JSON Schema of the negotiated version (v1 and v2; tests/demo check
it); faults named after the rule ids (rules.md) make it break exactly one rule each. Built on
a small JSON-RPC loop of its own: the official Python SDK speaks v1 only.

Its replays are the session (rules.md "Replay fidelity"): the sessions it knows from before
(`--session`) have a fabricated history (and children); a session made by session/new has only
the turns prompted on it; a turn streams chunks whose concatenation is the message a replay
sends whole, under the same ids.
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from acp_trace import __version__
from acp_trace.demo import faults as fault_kit
from acp_trace.demo.faults import bend
from acp_trace.demo.history import (
    Session,
    fabricate,
    marker,
    replay_window,
    resume_window,
    state,
    words,
)
from acp_trace.demo.rpc import ConnectionClosed, Endpoint, Message
from acp_trace.demo.window import (
    CRASH_EXIT_CODE,
    Action,
    Crash,
    Pause,
    Step,
    Window,
    parse_gap,
    permission_params,
)
from acp_trace.jsonrpc import (
    AIR_EVENT_META,
    CANCEL_METHOD,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    air_opted_in,
    id_key,
)

AGENT_NAME = "acp-trace-demo-agent"
__all__ = ["CRASH_EXIT_CODE", "FAULTS", "AgentOptions", "DemoAgent", "run_agent"]

# name -> what it does (demo/faults.py holds the catalogue the mock shares)
FAULTS: dict[str, str] = {name: fault.says for name, fault in fault_kit.FAULTS.items()}
_CHILD_FAULTS = frozenset({"child-marker-missing", "child-marker-before-announce"})


@dataclass(frozen=True)
class AgentOptions:
    """What the demo agent fabricates and how it misbehaves."""

    turns: int = 3  # of each session from before (session/new starts empty)
    pace: float = 0.0  # seconds between two replayed updates
    gap: str = "0"  # marker (v1: last update) to response, see faults.parse_gap
    seed: int = 0
    children: int = 0
    sessions: tuple[str, ...] = ("sess_demo",)
    new_prefix: str = "sess_new_"  # session/new names its sessions PREFIX1, PREFIX2, ...
    faults: frozenset[str] = field(default_factory=frozenset)  # NAME or NAME:N

    def __post_init__(self) -> None:
        fault_kit.parse_faults(sorted(self.faults))
        parse_gap(self.gap)


class DemoAgent:
    """Serves one connection: requests are handled in order on the calling thread."""

    def __init__(self, options: AgentOptions, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.opts = options
        self.faults = fault_kit.parse_faults(sorted(options.faults))
        self.children = max(options.children, 1 if self.faults.names & _CHILD_FAULTS else 0)
        self.protocol = 1
        self.air = False  # the client asked for the AIR end-of-replay event (initialize)
        self.rng = random.Random(options.seed)
        self.gap = parse_gap(options.gap)
        self.sessions: dict[str, Session] = {}
        for sid in options.sessions:
            self._create(sid)
        self.cancelled: set[str] = set()
        self.rpc = Endpoint(reader, writer, self._intercept)
        self._created = 0

    def serve(self) -> int:
        """Answer requests until stdin ends; returns the exit code."""
        self.rpc.start()
        while (msg := self.rpc.inbox.get()) is not None:
            try:
                self._handle(msg)
            except ConnectionClosed:
                break
        return 0

    def _intercept(self, msg: Message) -> bool:
        """Reader thread: note cancellations at once, so a running replay can stop."""
        if msg.get("method") == CANCEL_METHOD:
            request_id = (msg.get("params") or {}).get("requestId")
            self.cancelled.add(id_key(request_id))
            return True
        return False

    def _handle(self, msg: Message) -> None:
        if "_unparseable" in msg:
            self.rpc.fail(None, PARSE_ERROR, "parse error: the line is not JSON")
            return
        method, params = msg.get("method"), msg.get("params")
        if "id" not in msg:
            return  # notifications (session/cancel, ...) need no answer here
        handler = self._handlers().get(str(method))
        if handler is None or (method == "session/load" and self.protocol >= 2):
            self.rpc.fail(msg["id"], METHOD_NOT_FOUND, f"method not found: {method}")
            return
        handler(msg["id"], params if isinstance(params, dict) else {})

    def _handlers(self) -> dict[str, Any]:
        return {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/prompt": self._prompt,
            "session/load": self._load,
            "session/resume": self._resume,
        }

    # ------------------------------------------------------------ requests

    def _initialize(self, rid: Any, params: dict[str, Any]) -> None:
        asked = params.get("protocolVersion")
        self.protocol = 2 if isinstance(asked, int) and asked >= 2 else 1
        self.air = air_opted_in(params)
        info = {"name": AGENT_NAME, "version": __version__}
        if self.protocol >= 2:
            caps: dict[str, Any] = {"session": {"resume": {"replay": {}}}}
            result = {"protocolVersion": 2, "info": info, "capabilities": caps}
        else:
            caps = {"loadSession": True, "sessionCapabilities": {"resume": {}}}
            result = {"protocolVersion": 1, "agentInfo": info, "agentCapabilities": caps}
        self.rpc.respond(rid, {**result, "authMethods": []})
        if "non-json-line" in self.faults:
            self.rpc.send(b"demo-agent: this line is not JSON\n")
        if "orphan-response" in self.faults:
            self.rpc.respond("orphan-1", {})

    def _new(self, rid: Any, params: dict[str, Any]) -> None:
        self._created += 1
        sid = f"{self.opts.new_prefix}{self._created}"
        session = self.sessions[sid] = Session(sid, [])  # its history: the turns it will have
        session.active = True
        if "marker-unexpected" in self.faults:
            self._send(marker(sid))
        self.rpc.respond(rid, {"sessionId": sid})

    def _prompt(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._active(rid, params)
        if session is None:
            return
        blocks = params.get("prompt")
        text = (
            "".join(str(b.get("text", "")) for b in blocks or [] if isinstance(b, dict))
            or "(empty prompt)"
        )
        turn = len(session.turns)
        if self.protocol >= 2:
            self._accept(rid, session, turn, text)
        message_id = f"{session.sid}-a{turn}"
        for piece in words(text):  # their concatenation is the message, as a replay sends it
            chunk: dict[str, Any] = {"type": "text", "text": piece}
            update = {"sessionUpdate": "agent_message_chunk", "content": chunk}
            if self.protocol >= 2:
                update["messageId"] = message_id
            self._send(Step(session.sid, update))
        session.turns.append((text, text))
        if self.protocol >= 2:
            self._state(session.sid, "idle", stopReason="end_turn")
        else:
            self.rpc.respond(rid, {"stopReason": "end_turn"})

    def _accept(self, rid: Any, session: Session, turn: int, text: str) -> None:
        """v2: the prompt is accepted with the id of the user message it inserts (as a replay
        of the session later names it), the message echoed live, then the turn runs."""
        user_id = f"{session.sid}-u{turn}"
        self.rpc.respond(rid, {"messageId": user_id})
        content = [{"type": "text", "text": text}]
        echo = {"sessionUpdate": "user_message", "messageId": user_id, "content": content}
        self._send(Step(session.sid, echo))
        self._state(session.sid, "running")

    def _load(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._known(rid, params)
        if session is not None:
            window = replay_window(self.sessions, session.sid, 1)
            self._serve(rid, session, self._air(bend(window, self.faults, self._draw_gap)))

    def _resume(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._known(rid, params)
        if session is None:
            return
        cursor = params.get("replayFrom") if self.protocol >= 2 else None
        if cursor is not None and not (isinstance(cursor, dict) and cursor.get("type") == "start"):
            self.rpc.fail(rid, INVALID_PARAMS, f"unsupported replayFrom cursor: {cursor}")
            return
        if cursor is not None:
            window = self._air(
                bend(replay_window(self.sessions, session.sid, 2), self.faults, self._draw_gap)
            )
        else:
            window = bend(
                resume_window(session, self.protocol, self.faults.names),
                self.faults,
                self._draw_gap,
            )
        self._serve(rid, session, window)

    def _air(self, window: Window) -> Window:
        """To a client that asked for it (AIR `loadReplayEnd`), what claude-agent-acp 0.101.0
        sends after the whole replay of a load or of a v2 resume from the start: one
        `session_info_update` on the root session whose `_meta` is the AIR end-of-replay event
        (protocol-notes.md); not when the replay stops (a crash or an error reply)."""
        stops = any(isinstance(a, Crash) for a in window.replay)
        if not self.air or stops or window.reply.error is not None:
            return window
        event = {"sessionUpdate": "session_info_update", "_meta": AIR_EVENT_META}
        window.replay.append(Step(window.session, event))
        return window

    def _serve(self, rid: Any, session: Session, window: Window) -> None:
        """Send a window: replay (paced), tail, the response, then what follows it (paced)."""
        if not self._play(rid, window.replay) or not self._play(rid, window.tail, pace=False):
            return
        if window.reply.error is not None:
            self.rpc.fail(rid, *window.reply.error)
            return
        self.rpc.respond(rid, {})
        session.active = True
        self._play(None, window.after)

    # ------------------------------------------------------------ helpers

    def _create(self, sid: str) -> Session:
        family = fabricate(sid, self.opts.turns, self.children)
        for session in family:
            self.sessions[session.sid] = session
        return family[0]

    def _known(self, rid: Any, params: dict[str, Any]) -> Session | None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None:
            self.rpc.fail(rid, RESOURCE_NOT_FOUND, f"unknown session {params.get('sessionId')}")
        return session

    def _active(self, rid: Any, params: dict[str, Any]) -> Session | None:
        session = self._known(rid, params)
        if session is not None and not session.active:
            self.rpc.fail(rid, RESOURCE_NOT_FOUND, f"session {session.sid} is not active yet")
            return None
        return session

    def _play(self, rid: Any, actions: list[Action], pace: bool = True) -> bool:
        """Send the actions (at the configured pace); False (and -32800 sent) when cancelled."""
        for action in actions:
            if isinstance(action, Pause):
                delay = action.draw()
                if delay > 0:
                    time.sleep(delay)
                continue
            if rid is not None and id_key(rid) in self.cancelled:
                self.rpc.fail(rid, REQUEST_CANCELLED, "request cancelled")
                return False
            if isinstance(action, Crash):
                sys.stdout.flush()
                os._exit(action.code)
            if action.ask is not None:
                assert action.session is not None
                self.rpc.request(action.ask, permission_params(action.session, self.protocol))
            else:
                self._send(action)
            if pace and self.opts.pace > 0:
                time.sleep(self.opts.pace)
        return True

    def _send(self, step: Step) -> None:
        self.rpc.notify("session/update", {"sessionId": step.session, "update": step.update})

    def _state(self, sid: str, value: str, **extra: Any) -> None:
        self._send(state(sid, value, **extra))

    def _draw_gap(self) -> float:
        return self.gap(self.rng)


def run_agent(
    options: AgentOptions, reader: IO[bytes] | None = None, writer: IO[bytes] | None = None
) -> int:
    """Serve ACP on stdin/stdout (or the given streams) until the input ends; returns 0."""
    agent = DemoAgent(options, reader or sys.stdin.buffer, writer or sys.stdout.buffer)
    return agent.serve()
