"""A scripted ACP client: drives any agent command through initialize, a new session (or one
given by id, opened first without a replay when there are prompts to send on it), prompts, then
N replaying resumes (v2) or loads (v1) of that session.

It answers the agent's requests (session/request_permission: allow; anything else: -32601),
can save every byte it sent and received, and ends the agent (its process group) after
closing its stdin and a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acp_trace import __version__
from acp_trace.demo.rpc import ConnectionClosed, Endpoint, Message, wait_limit
from acp_trace.errors import RecordError
from acp_trace.files import writing
from acp_trace.jsonrpc import AIR_CLIENT_META, METHOD_NOT_FOUND
from acp_trace.quantities import count, seconds

CLIENT_NAME = "acp-trace-demo-client"


@dataclass(frozen=True)
class ClientOptions:
    """What the demo client asks of the agent."""

    command: tuple[str, ...]
    protocol: int = 2
    resumes: int = 1
    session: str | None = None
    cwd: str = "/home/user/project"
    prompts: tuple[str, ...] = ()  # prompt turns, in order, before the replays
    cursor: str = "start"  # v2 replayFrom type; "none" sends no replayFrom
    timeout: float = 60.0  # per response
    grace: float = 5.0  # after closing the agent's stdin, before SIGTERM to its group
    save: Path | None = None  # every byte received from the agent
    save_sent: Path | None = None  # every byte sent to the agent
    env: dict[str, str] | None = None
    air: bool = False  # advertise JetBrains AIR's loadReplayEnd capability in initialize


@dataclass
class Exchange:
    """One request the client sent and what came back."""

    method: str
    session: str | None
    answered: bool = False
    error_code: int | None = None
    updates: int = 0  # session/update notifications received while it was pending
    seconds: float = 0.0


@dataclass
class ClientResult:
    """What the run did: exchanges in order, whether it finished, the agent's exit code."""

    exchanges: list[Exchange] = field(default_factory=list)
    protocol: int | None = None
    finished: bool = False
    problem: str | None = None
    agent_exit: int | None = None


class _Driver:
    """The conversation with one agent process."""

    def __init__(self, opts: ClientOptions, proc: subprocess.Popen[bytes], tees: ExitStack) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.opts = opts
        self.proc = proc
        self.updates: list[Message] = []
        self.turn_ended = threading.Condition()
        tee_in, tee_out = _open(tees, opts.save), _open(tees, opts.save_sent)
        self.rpc = Endpoint(
            proc.stdout, proc.stdin, self._on_message, tee_in=tee_in, tee_out=tee_out
        )
        self.result = ClientResult()

    def _on_message(self, msg: Message) -> bool:
        """Reader thread: answer agent requests, count updates."""
        method = msg.get("method")
        if "id" in msg and method == "session/request_permission":
            self.rpc.respond(msg["id"], {"outcome": _allow(msg.get("params") or {})})
        elif "id" in msg:
            self.rpc.fail(msg["id"], METHOD_NOT_FOUND, f"method not found: {method}")
        elif method == "session/update":
            with self.turn_ended:
                self.updates.append(msg)
                self.turn_ended.notify_all()
        return True

    def run(self) -> None:
        init = self._call("initialize", _init_params(self.opts.protocol, self.opts.air), None)
        result = init.get("result") or {}
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        self.result.protocol = version if isinstance(version, int) else self.opts.protocol
        sid = self.opts.session or self._new_session()
        if sid is None:
            return
        if self.opts.session is not None and self.opts.prompts:
            self._open(sid, _can_resume(result, self.result.protocol))
        for text in self.opts.prompts:
            self._prompt(sid, text)
        for _ in range(self.opts.resumes):
            self._replay(sid)
        self.result.finished = True

    def _new_session(self) -> str | None:
        answer = self._call("session/new", {"cwd": self.opts.cwd, "mcpServers": []}, None)
        sid = (answer.get("result") or {}).get("sessionId")
        if not isinstance(sid, str):
            self.result.problem = f"session/new gave no sessionId: {answer}"
            return None
        return sid

    def _open(self, sid: str, resume: bool) -> None:
        """A session from before, opened to take prompts: a resume without replay (v2: no
        `replayFrom`; v1: session/resume, else session/load when the agent has no resume)."""
        params: dict[str, Any] = {"sessionId": sid, "cwd": self.opts.cwd}
        if resume:
            self._call("session/resume", params, sid)
        else:
            self._call("session/load", {**params, "mcpServers": []}, sid)

    def _prompt(self, sid: str, text: str) -> None:
        seen = len(self.updates)
        prompt = [{"type": "text", "text": text}]
        answer = self._call("session/prompt", {"sessionId": sid, "prompt": prompt}, sid)
        if self.result.protocol == 2 and "result" in answer:
            with self.turn_ended:
                ok = self.turn_ended.wait_for(
                    lambda: _turn_end(self.updates[seen:], sid),
                    timeout=wait_limit(self.opts.timeout),
                )
            if not ok:
                raise TimeoutError(f"no idle state_update ended the prompt on {sid}")

    def _replay(self, sid: str) -> None:
        params: dict[str, Any] = {"sessionId": sid, "cwd": self.opts.cwd}
        if self.result.protocol == 2:
            if self.opts.cursor != "none":
                params["replayFrom"] = {"type": self.opts.cursor}
            self._call("session/resume", params, sid)
        else:
            self._call("session/load", {**params, "mcpServers": []}, sid)

    def _call(self, method: str, params: Any, sid: str | None) -> Message:
        exchange = Exchange(method, sid)
        self.result.exchanges.append(exchange)
        seen, start = len(self.updates), time.monotonic()
        answer = self.rpc.request(method, params, timeout=self.opts.timeout)
        exchange.answered = True
        exchange.seconds = time.monotonic() - start
        exchange.updates = len(self.updates) - seen
        error = answer.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            exchange.error_code = error["code"]
        return answer


def _allow(params: dict[str, Any]) -> dict[str, Any]:
    options = [o for o in params.get("options") or [] if isinstance(o, dict)]
    allowing = [o for o in options if str(o.get("kind", "")).startswith("allow")]
    chosen = (allowing or options or [{"optionId": "allow"}])[0]
    return {"outcome": "selected", "optionId": chosen.get("optionId")}


def _can_resume(result: Any, protocol: int | None) -> bool:
    """Whether the agent resumes without replay: always in v2; in v1 when initialize's answer
    has `agentCapabilities.sessionCapabilities.resume`."""
    if protocol == 2:
        return True
    caps = result.get("agentCapabilities") if isinstance(result, dict) else None
    session = caps.get("sessionCapabilities") if isinstance(caps, dict) else None
    return isinstance(session, dict) and "resume" in session


def _turn_end(updates: list[Message], sid: str) -> bool:
    for msg in updates:
        params = msg.get("params") or {}
        update = params.get("update") or {}
        if (
            params.get("sessionId") == sid
            and update.get("sessionUpdate") == "state_update"
            and update.get("state") == "idle"
        ):
            return True
    return False


def _init_params(protocol: int, air: bool = False) -> dict[str, Any]:
    """initialize's params; `air` adds the `_meta` that asks claude-agent-acp (JetBrains AIR's
    extension) for its end-of-replay event, as protocol-notes.md says."""
    info = {"name": CLIENT_NAME, "version": __version__}
    meta = {"_meta": AIR_CLIENT_META} if air else {}
    if protocol >= 2:
        return {"protocolVersion": protocol, "info": info, "capabilities": {**meta}}
    caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, **meta}
    return {"protocolVersion": protocol, "clientInfo": info, "clientCapabilities": caps}


def run_client(opts: ClientOptions) -> ClientResult:
    """Start the agent, run the conversation, end the agent; never raises for agent failures."""
    with ExitStack() as tees:
        driver = _Driver(opts, _spawn(opts), tees)
        driver.rpc.start()
        try:
            driver.run()
        except (ConnectionClosed, TimeoutError) as exc:
            driver.result.problem = str(exc)
        driver.result.agent_exit = _finish(driver.proc, driver.rpc, opts.grace)
        return driver.result


def _open(stack: ExitStack, path: Path | None) -> IO[bytes] | None:
    """The file that keeps the bytes of one direction: private, written through
    `acp_trace.files` (in place once the client ends; a link there is replaced)."""
    return None if path is None else stack.enter_context(writing(path))


def _spawn(opts: ClientOptions) -> subprocess.Popen[bytes]:
    env = None if opts.env is None else {**os.environ, **opts.env}
    try:
        return subprocess.Popen(
            list(opts.command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise RecordError(f"cannot start the agent {opts.command[0]!r}: {exc.strerror}") from exc


def _finish(proc: subprocess.Popen[bytes], rpc: Endpoint, grace: float) -> int:
    """Close the agent's stdin, let it exit, else end its process group; read all it wrote."""
    assert proc.stdin is not None
    with suppress(OSError):
        proc.stdin.close()
    try:
        code = proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        code = _end_group(proc)
    rpc.closed.wait(timeout=grace)
    if rpc.closed.is_set():
        assert proc.stdout is not None
        proc.stdout.close()
    return code


def _end_group(proc: subprocess.Popen[bytes]) -> int:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def format_result(result: ClientResult) -> str:
    """One line per exchange, for `--summary`."""
    lines = [f"protocol {result.protocol}"]
    for ex in result.exchanges:
        status = "ok" if ex.error_code is None else f"error {ex.error_code}"
        status = status if ex.answered else "no response"
        where = f" {ex.session}" if ex.session else ""
        lines.append(
            f"{ex.method}{where}: {status}, {count(ex.updates)} updates, {seconds(ex.seconds)}"
        )
    if not result.finished:
        lines.append(f"not finished: {result.problem}")
    return "\n".join(lines) + "\n"
