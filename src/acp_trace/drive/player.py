"""Play a script's client side against a live agent started behind the tap.

The agent runs as `acp-trace record -o TRACE -- AGENT...` (a process group of its own), so the
new run is recorded exactly as any other. Steps go out in order, each once what it waited for
in the recording has happened here too (the answers to the requests it followed, the ends of
the v2 turns), after the recorded pause scaled by `speed`. Ids are the player's own; a session
id a `session/new` or `session/fork` answer gives replaces the recorded one in every later
message. The agent's requests get the recording's answers, by method and order.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_trace.demo.rpc import ConnectionClosed, Endpoint, Message
from acp_trace.drive.script import REPLAYING, Script, Step
from acp_trace.drive.tap import finish, spawn, tap_command
from acp_trace.jsonrpc import CANCEL_METHOD, INTERNAL_ERROR, as_dict, as_int, as_str, id_key

UNKNOWN_SESSION = -32002
pause = time.sleep  # the recorded pauses (a test counts them instead)
SESSION_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})


@dataclass(frozen=True)
class PlayOptions:
    """How to play: the agent, where its trace goes, and how closely to follow the recording."""

    command: tuple[str, ...]
    trace: Path  # the new trace (the tap's -o)
    protocol: int | None = None  # override the recorded initialize's protocolVersion
    speed: float = 1.0  # 1 as recorded, 2 twice as fast, 0 no pauses
    timeout: float = 60.0  # for each answer waited on
    grace: float = 5.0  # after closing the agent's stdin
    sessions: tuple[tuple[str, str], ...] = ()  # recorded id -> the agent's id
    cwd: str | None = None  # replaces `cwd` in session requests
    env: dict[str, str] | None = None


@dataclass
class Sent:
    """A step as it went out, and its answer."""

    step: Step
    live_id: Any = None
    answer: Message | None = None
    waited: bool = False

    @property
    def error_code(self) -> int | None:
        """The code of an error answer, else None."""
        error = as_dict(self.answer.get("error")) if self.answer is not None else {}
        return as_int(error.get("code")) if error else None


@dataclass
class PlayResult:
    """What the play did."""

    trace: Path
    sent: list[Sent] = field(default_factory=list)
    asked: Counter[str] = field(default_factory=Counter)  # agent requests per method
    unanswerable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # why the play stopped early
    sessions: dict[str, str] = field(default_factory=dict)  # recorded -> live
    tap_exit: int | None = None
    tap_stderr: str = ""


def replace_ids(value: Any, table: dict[str, str]) -> Any:
    """`value` with every string equal to a key of `table` replaced by its value."""
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, dict):
        return {k: replace_ids(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_ids(v, table) for v in value]
    return value


class Player:
    """One play of a script against one agent process."""

    def __init__(self, script: Script, opts: PlayOptions, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.script, self.opts, self.proc = script, opts, proc
        self.result = PlayResult(opts.trace, sessions=dict(opts.sessions))
        self.by_step: dict[int, Sent] = {}
        self.live_ids: dict[str, Any] = {}  # recorded client request id -> live id
        self.idle: Counter[str] = Counter()  # idle state_updates per live session
        self.idle_at_send: dict[int, int] = {}
        self.changed = threading.Condition()
        self.served: Counter[str] = Counter()
        self.rpc = Endpoint(proc.stdout, proc.stdin, self._on_message)

    # ------------------------------------------------------------ the agent's messages

    def _on_message(self, msg: Message) -> bool:
        method = msg.get("method")
        if "id" in msg and isinstance(method, str):
            self._answer_agent(msg, method)
        elif method == "session/update":
            params = as_dict(msg.get("params"))
            update = as_dict(params.get("update"))
            if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                with self.changed:
                    self.idle[as_str(params.get("sessionId")) or ""] += 1
                    self.changed.notify_all()
        return True

    def _answer_agent(self, msg: Message, method: str) -> None:
        self.result.asked[method] += 1
        recorded = self.script.answers.get(method, [])
        n = self.served[method]
        if n >= len(recorded):
            text = (
                f"acp-trace drive: the recording has no answer for {method} number {n + 1} "
                f"(it answered {len(recorded)})"
            )
            self.result.unanswerable.append(text.removeprefix("acp-trace drive: "))
            self.rpc.fail(msg["id"], INTERNAL_ERROR, text)
            return
        self.served[method] += 1
        answer = replace_ids(recorded[n], self.result.sessions)
        answer = {k: v for k, v in answer.items() if k in ("result", "error")}
        self.rpc.send({"jsonrpc": "2.0", "id": msg["id"], **answer})

    # ------------------------------------------------------------ the client's steps

    def play(self) -> None:
        """Send every step in order; stop at the first answer that does not come."""
        for step in self.script.steps:
            if not all(self._await(i) for i in step.after):
                return
            if not all(self._await_turn(i) for i in step.turns):
                return
            if self.opts.speed > 0 and step.think_ns > 0:
                pause(step.think_ns / 1e9 / self.opts.speed)
            if self.rpc.closed.is_set():
                self.result.problem = f"the agent's connection ended before {_name(step)}"
                return
            self._send(step)
        for sent in self.result.sent:
            if sent.step.reply is not None and not self._await(sent.step.index):
                return

    def _send(self, step: Step) -> None:
        params = replace_ids(step.params, self.result.sessions)
        if step.method == "initialize" and self.opts.protocol is not None:
            params = {**as_dict(params), "protocolVersion": self.opts.protocol}
        if (
            self.opts.cwd is not None
            and step.method in SESSION_METHODS
            and "cwd" in as_dict(params)
        ):
            params = {**params, "cwd": self.opts.cwd}
        if step.method == CANCEL_METHOD and "requestId" in as_dict(params):
            live = self.live_ids.get(id_key(params["requestId"]))
            params = {**params, "requestId": live if live is not None else params["requestId"]}
        sent = Sent(step)
        self.result.sent.append(sent)
        self.by_step[step.index] = sent
        if not step.is_request:
            self.rpc.notify(step.method, params)
            return
        session = as_str(as_dict(params).get("sessionId")) or ""
        with self.changed:
            self.idle_at_send[step.index] = self.idle[session]
        sent.live_id = self.rpc.start_request(step.method, params)
        self.live_ids[id_key(step.recorded_id)] = sent.live_id

    def _await(self, index: int) -> bool:
        sent = self.by_step[index]
        if sent.waited:
            return sent.answer is not None
        sent.waited = True
        try:
            sent.answer = self.rpc.wait(sent.live_id, self.opts.timeout)
        except TimeoutError:
            self.result.problem = f"no answer to {_name(sent.step)} within {self.opts.timeout:g} s"
            return False
        except ConnectionClosed:
            self.result.problem = (
                f"the agent's connection ended before it answered {_name(sent.step)}"
            )
            return False
        self._learn(sent)
        return True

    def live_protocol(self) -> int:
        """The version the live initialize answer settled (1 when it said none)."""
        init = next((s for s in self.result.sent if s.step.method == "initialize"), None)
        answer = init.answer if init is not None else None
        result = as_dict(answer.get("result")) if answer is not None else {}
        return as_int(result.get("protocolVersion")) or 1

    def _learn(self, sent: Sent) -> None:
        step, answer = sent.step, sent.answer or {}
        live = as_str(as_dict(answer.get("result")).get("sessionId"))
        if step.created_session is not None and live is not None:
            self.result.sessions.setdefault(step.created_session, live)
        if sent.error_code == UNKNOWN_SESSION and step.method in REPLAYING:
            self.result.notes.append(unknown_session_note(step, self.result.sessions))

    def _await_turn(self, index: int) -> bool:
        """Wait for the idle state_update that ends a v2 prompt's turn (an error answer ends it
        at once)."""
        if not self._await(index):
            return False
        sent = self.by_step[index]
        if sent.error_code is not None or self.live_protocol() < 2:
            return True  # an error ends the turn; a v1 turn ends with its answer
        session = replace_ids(sent.step.session or "", self.result.sessions)
        before = self.idle_at_send[index]
        with self.changed:
            ok = self.changed.wait_for(
                lambda: self.idle[session] > before or self.rpc.closed.is_set(),
                timeout=self.opts.timeout,
            )
        if not ok or self.idle[session] <= before:
            self.result.problem = (
                f"no idle state_update ended the turn of {_name(sent.step)} "
                f"within {self.opts.timeout:g} s"
            )
            return False
        return True


def _name(step: Step) -> str:
    where = f" on {step.session}" if step.session else ""
    return f"{step.method}{where} (client message {step.index + 1}, recorded seq {step.seq})"


def unknown_session_note(step: Step, sessions: dict[str, str]) -> str:
    """What a -32002 answer to a load or resume means for a drive, and what to do."""
    recorded = step.session or "?"
    live = sessions.get(recorded, recorded)
    return (
        f"{step.method} of session {live} was answered -32002 (unknown session): the agent has "
        f"no stored session {live}. drive sends what the client sent, it cannot create the "
        "agent's history: store that session where the agent keeps its sessions before the run "
        "(acp-trace's repository has history fabricators for codex-acp, gemini-cli and "
        "claude-agent-acp in tests/peers/fixtures/), or name one the agent has with "
        f"--session {recorded}=STORED_ID"
    )


def play(script: Script, opts: PlayOptions) -> PlayResult:
    """Start the agent behind the tap, play the script, end the agent; never raises for what
    the agent does (that is in the result), RecordError when the tap cannot start."""
    with tempfile.TemporaryFile() as err:
        proc = spawn(tap_command(opts.trace, opts.command, opts.grace), opts.env, err)
        player = Player(script, opts, proc)
        player.rpc.start()
        try:
            player.play()
        finally:
            player.result.tap_exit = finish(proc, player.rpc, opts.grace)
        err.seek(0)
        player.result.tap_stderr = err.read()[-4000:].decode("utf-8", "replace")
    return player.result
