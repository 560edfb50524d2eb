"""A reference ACP agent over stdio (v1 and v2) with a fabricated history and injectable faults.

`acp-trace demo-agent` serves initialize, session/new, session/prompt (echo), v1 session/load
and session/resume, v2 session/resume with `replayFrom: {"type": "start"}` (replay, children,
`replay_complete`, then a `state_update` snapshot, then the response). Faults named after the
rule ids (rules.md) make it break exactly one rule each. Built on a small JSON-RPC loop of its
own: the official Python SDK speaks v1 only.
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from acp_trace import __version__
from acp_trace.demo.history import Session, Step, fabricate, history_steps, marker, parse_gap
from acp_trace.demo.history import replay_plan as _replay_plan
from acp_trace.demo.rpc import ConnectionClosed, Endpoint, Message
from acp_trace.jsonrpc import (
    CANCEL_METHOD,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    id_key,
)

AGENT_NAME = "acp-trace-demo-agent"
CRASH_EXIT_CODE = 3

FAULTS: dict[str, str] = {
    "marker-missing": "v2 replay without the replay_complete marker",
    "marker-late": "the marker comes after the response",
    "marker-duplicate": "two markers for one resume",
    "marker-unexpected": "a marker on session/new and on a resume without cursor",
    "marker-with-rejection": "the whole replay and its marker, then -32602",
    "live-before-marker": "an available_commands_update before the replayed history",
    "request-before-marker": "a session/request_permission in the middle of the replay",
    "child-marker-missing": "child sessions get no marker (implies one child at least)",
    "child-marker-before-announce": "a child's replay and marker come before its subagent_update",
    "state-snapshot-missing": "no state_update before the resume response",
    "message-id-missing": "v2 replayed messages carry no messageId",
    "replay-without-cursor": "a resume without cursor (v1: session/resume) replays the history",
    "load-updates-after-response": "v1 load: the response after the first update, then the rest",
    "crash-mid-replay": f"exit with code {CRASH_EXIT_CODE} in the middle of the replay",
    "error-after-marker": "the replay and its marker, then -32603",
    "non-json-line": "a line of plain text on stdout after the initialize response",
    "orphan-response": "a response to no request after the initialize response",
}
_CHILD_FAULTS = frozenset({"child-marker-missing", "child-marker-before-announce"})


@dataclass(frozen=True)
class AgentOptions:
    """What the demo agent fabricates and how it misbehaves."""

    turns: int = 3
    pace: float = 0.0  # seconds between two replayed updates
    gap: str = "0"  # marker (v1: last update) to response, see demo_history.parse_gap
    seed: int = 0
    children: int = 0
    sessions: tuple[str, ...] = ("sess_demo",)
    faults: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        unknown = sorted(self.faults - FAULTS.keys())
        if unknown:
            raise ValueError(f"unknown fault {unknown[0]!r}; known: {', '.join(FAULTS)}")
        parse_gap(self.gap)


class DemoAgent:
    """Serves one connection: requests are handled in order on the calling thread."""

    def __init__(self, options: AgentOptions, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.opts = options
        self.faults = options.faults
        self.children = max(options.children, 1 if options.faults & _CHILD_FAULTS else 0)
        self.protocol = 1
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
        sid = f"sess_new_{self._created}"
        self._create(sid).active = True
        if "marker-unexpected" in self.faults:
            self._send(marker(sid))
        self.rpc.respond(rid, {"sessionId": sid})

    def _prompt(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._active(rid, params)
        if session is None:
            return
        blocks = params.get("prompt")
        text = (
            " ".join(str(b.get("text", "")) for b in blocks or [] if isinstance(b, dict))
            or "(empty prompt)"
        )
        if self.protocol >= 2:
            self.rpc.respond(rid, {})
            self._state(session.sid, "running")
        message_id = f"{session.sid}-a{len(session.turns)}"
        for word in text.split(" "):
            chunk: dict[str, Any] = {"type": "text", "text": word + " "}
            update = {"sessionUpdate": "agent_message_chunk", "content": chunk}
            if self.protocol >= 2:
                update["messageId"] = message_id
            self._send(Step(session.sid, update))
        session.turns.append((text, text))
        if self.protocol >= 2:
            self._state(session.sid, "idle", stopReason="end_turn")
        else:
            self.rpc.respond(rid, {"stopReason": "end_turn"})

    def _load(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._known(rid, params)
        if session is None:
            return
        steps = _replay_plan(self.sessions, session.sid, 1, self.faults)
        if "load-updates-after-response" in self.faults and steps:
            if self._play(rid, steps[:1]):
                self.rpc.respond(rid, {})
                session.active = True
                self._play(None, steps[1:])
        elif self._play(rid, steps):
            self._sleep_gap()
            self.rpc.respond(rid, {})
            session.active = True

    def _resume(self, rid: Any, params: dict[str, Any]) -> None:
        session = self._known(rid, params)
        if session is None:
            return
        cursor = params.get("replayFrom") if self.protocol >= 2 else None
        if cursor is not None and not (isinstance(cursor, dict) and cursor.get("type") == "start"):
            self.rpc.fail(rid, INVALID_PARAMS, f"unsupported replayFrom cursor: {cursor}")
            return
        if not self._play(rid, self._resume_steps(session, cursor is not None)):
            return
        if self._resume_error(rid, cursor is not None):
            return
        self._sleep_gap()
        if self.protocol >= 2 and "state-snapshot-missing" not in self.faults:
            self._state(session.sid, "idle")
        self.rpc.respond(rid, {})
        session.active = True
        if cursor is not None and "marker-late" in self.faults:
            self._send(marker(session.sid))

    def _resume_steps(self, session: Session, replay: bool) -> list[Step]:
        if replay:
            return _replay_plan(self.sessions, session.sid, 2, self.faults)
        steps = []
        if "replay-without-cursor" in self.faults:
            steps = history_steps(session, self.protocol, self.faults)
        if self.protocol >= 2 and "marker-unexpected" in self.faults:
            steps.append(marker(session.sid))
        return steps

    def _resume_error(self, rid: Any, replay: bool) -> bool:
        """The faults that answer a finished replay with an error; True when one did."""
        if replay and "error-after-marker" in self.faults:
            self.rpc.fail(rid, INTERNAL_ERROR, "internal error after the replay (injected)")
            return True
        if replay and "marker-with-rejection" in self.faults:
            self.rpc.fail(rid, INVALID_PARAMS, "cursor rejected after the replay (injected)")
            return True
        return False

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

    def _play(self, rid: Any, steps: list[Step]) -> bool:
        """Send the steps at the configured pace; False (and -32800 sent) when cancelled."""
        for i, step in enumerate(steps):
            if id_key(rid) in self.cancelled:
                self.rpc.fail(rid, REQUEST_CANCELLED, "request cancelled")
                return False
            if "crash-mid-replay" in self.faults and i == len(steps) // 2:
                sys.stdout.flush()
                os._exit(CRASH_EXIT_CODE)
            if step.update is None:
                self._ask_permission(step.session)
            else:
                self._send(step)
            if self.opts.pace > 0:
                time.sleep(self.opts.pace)
        return True

    def _ask_permission(self, sid: str) -> None:
        tool_call = {"toolCallId": "call_replay", "title": "Read the project files"}
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        params = {"sessionId": sid, "toolCall": tool_call, "options": options}
        self.rpc.request("session/request_permission", params)

    def _send(self, step: Step) -> None:
        self.rpc.notify("session/update", {"sessionId": step.session, "update": step.update})

    def _state(self, sid: str, state: str, **extra: Any) -> None:
        self._send(Step(sid, {"sessionUpdate": "state_update", "state": state, **extra}))

    def _sleep_gap(self) -> None:
        delay = self.gap(self.rng)
        if delay > 0:
            time.sleep(delay)


def run_agent(
    options: AgentOptions, reader: IO[bytes] | None = None, writer: IO[bytes] | None = None
) -> int:
    """Serve ACP on stdin/stdout (or the given streams) until the input ends; returns 0."""
    agent = DemoAgent(options, reader or sys.stdin.buffer, writer or sys.stdout.buffer)
    return agent.serve()
