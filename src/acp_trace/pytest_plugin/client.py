"""A small synchronous ACP client for tests: send a request and wait for its answer, collect
a session's updates, answer the agent's requests with the test's callbacks.

Every wait has a timeout, and a timeout says what was waited for and what the agent sent
meanwhile. An error answer raises AcpError (its code, message and the request it answered).
An agent request with no callback gets -32601 and is listed in `unhandled`; a callback that
raises anything but AcpError answers -32603 and is raised again by the client's next wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from acp_trace import __version__
from acp_trace.demo.rpc import ConnectionClosed, Endpoint, Message
from acp_trace.drive.tap import seconds_problem
from acp_trace.jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    as_dict,
    as_int,
    as_str,
    error_detail,
)
from acp_trace.quantities import counted

CLIENT_INFO = {"name": "acp-trace-pytest", "version": __version__}
Callback = Callable[[dict[str, Any]], Any]


class AcpError(Exception):
    """An error answer: `code`, `message`, `data`, and the `method` it answered."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "") -> None:
        where = f"{method} answered " if method else ""
        said = error_detail({"message": message, "data": data})
        super().__init__(f"{where}error {code}: {said}")
        self.code, self.message, self.data, self.method = code, message, data, method


class AcpTimeout(TimeoutError):
    """A wait that ran out; the message names what was waited for."""


class Pending:
    """A request sent and not yet waited for."""

    def __init__(self, client: AcpClient, method: str, msg_id: Any) -> None:
        self.client, self.method, self.id = client, method, msg_id

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the answer: its `result`, AcpError for an error answer."""
        return self.client._wait(self, timeout)


class AcpClient:
    """The client side of one connection to an agent."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes], timeout: float = 30.0) -> None:
        """Talk over `reader` (the agent's stdout) and `writer` (its stdin); `start()` it."""
        self.rpc = Endpoint(reader, writer, self.handle)
        self.timeout = _limit(timeout, "AcpClient(timeout=...)")
        self.stderr: Path | None = None  # the agent's stderr, quoted when a wait fails
        self.protocol: int | None = None
        self.notifications: list[Message] = []
        self.unhandled: list[Message] = []
        self.callbacks: dict[str, Callback] = {}
        self._errors: list[BaseException] = []
        self._seen = threading.Condition()

    def start_reading(self) -> AcpClient:
        """Start the reader thread; returns self."""
        self.rpc.start()
        return self

    # ------------------------------------------------------------ the agent's messages

    def handle(self, msg: Message) -> bool:
        """The endpoint's handler (reader thread): answer requests, keep notifications."""
        method = msg.get("method")
        if "id" in msg and isinstance(method, str):
            self._answer(msg, method)
        else:
            with self._seen:
                self.notifications.append(msg)
                self._seen.notify_all()
        return True

    def _answer(self, msg: Message, method: str) -> None:
        callback = self.callbacks.get(method)
        if callback is None:
            self.unhandled.append(msg)
            self.rpc.fail(msg["id"], METHOD_NOT_FOUND, f"the test has no callback for {method}")
            return
        try:
            self.rpc.respond(msg["id"], callback(as_dict(msg.get("params"))))
        except AcpError as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            self.rpc.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
        except Exception as exc:  # the test's own bug: answer, then raise it in the test
            self._errors.append(exc)
            self.rpc.fail(msg["id"], INTERNAL_ERROR, f"the test's callback for {method} failed")

    def on_request(self, method: str, callback: Callback) -> None:
        """Answer the agent's `method` requests with `callback(params)` (its return value is
        the result; raise AcpError for an error answer)."""
        self.callbacks[method] = callback

    # ------------------------------------------------------------ requests

    def start(self, method: str, params: Any = None) -> Pending:
        """Send a request without waiting (`.result()` waits)."""
        return Pending(self, method, self.rpc.start_request(method, params or {}))

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result (AcpError for an error answer)."""
        if timeout is not None:
            _limit(timeout, f"{method} timeout")  # before anything is sent
        return self.start(method, params).result(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self.rpc.notify(method, params or {})

    def _wait(self, pending: Pending, timeout: float | None) -> Any:
        limit = self.timeout if timeout is None else _limit(timeout, f"{pending.method} timeout")
        try:
            answer = self.rpc.wait(pending.id, limit)
        except TimeoutError:
            raise AcpTimeout(
                f"no answer to {pending.method} (id {pending.id}) within {limit:g} s; "
                f"{self._meanwhile()}"
            ) from None
        except ConnectionClosed:
            raise ConnectionError(
                f"the agent closed the connection before answering {pending.method} "
                f"(id {pending.id}); {self._meanwhile()}"
            ) from None
        self._raise_callback_errors()
        error = answer.get("error")
        if error is not None:
            error = as_dict(error)
            code = as_int(error.get("code"))
            raise AcpError(
                code if code is not None else 0,
                str(error.get("message", "")),
                error.get("data"),
                pending.method,
            )
        return answer.get("result")

    def _meanwhile(self) -> str:
        with self._seen:
            received, last = len(self.notifications), self.notifications[-1:]
        said = f"last: {_short(last[0])}" if last else "none"
        return f"{counted(received, 'notification')} received ({said}){self._stderr_tail()}"

    def _stderr_tail(self) -> str:
        try:
            lines = self.stderr.read_bytes()[-2000:].splitlines() if self.stderr else []
        except OSError:
            return ""
        tail = [line.decode("utf-8", "replace") for line in lines if line.strip()][-3:]
        return "; the agent's stderr ends: " + " | ".join(tail) if tail else ""

    def _raise_callback_errors(self) -> None:
        if self._errors:
            raise self._errors.pop(0)

    # ------------------------------------------------------------ updates

    def updates(self, session: str | None = None) -> list[dict[str, Any]]:
        """The `update` of every session/update received so far (on `session` if given)."""
        with self._seen:
            msgs = list(self.notifications)
        out = []
        for msg in msgs:
            params = as_dict(msg.get("params"))
            if msg.get("method") == "session/update" and (
                session is None or params.get("sessionId") == session
            ):
                out.append(as_dict(params.get("update")))
        return out

    def wait_for_update(
        self,
        session: str,
        kind: str,
        *,
        after: int = 0,
        match: Callable[[dict[str, Any]], bool] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Wait for a `kind` update on `session` (the `after`-th update on it or later, and
        `match`ing when given); returns it."""
        limit = self.timeout if timeout is None else _limit(timeout, "wait_for_update timeout")

        def found() -> dict[str, Any] | None:
            for update in self.updates(session)[after:]:
                if update.get("sessionUpdate") == kind and (match is None or match(update)):
                    return update
            return None

        with self._seen:
            self._seen.wait_for(lambda: found() is not None or self.rpc.closed.is_set(), limit)
        update = found()
        self._raise_callback_errors()
        if update is None:
            why = "the agent closed the connection" if self.rpc.closed.is_set() else "timed out"
            raise AcpTimeout(
                f"no {kind} update on session {session} within {limit:g} s ({why}); "
                f"{self._meanwhile()}"
            )
        return update

    # ------------------------------------------------------------ ACP steps

    def initialize(self, protocol: int = 2, capabilities: dict[str, Any] | None = None) -> Any:
        """Send initialize in the shape of `protocol`; the answer's version is `self.protocol`."""
        if protocol >= 2:
            params = {"protocolVersion": protocol, "info": CLIENT_INFO,
                      "capabilities": capabilities or {}}  # fmt: skip
        else:
            caps = capabilities or {"fs": {"readTextFile": False, "writeTextFile": False},
                                    "terminal": False}  # fmt: skip
            params = {"protocolVersion": protocol, "clientInfo": CLIENT_INFO,
                      "clientCapabilities": caps}  # fmt: skip
        result = self.request("initialize", params)
        self.protocol = as_int(as_dict(result).get("protocolVersion")) or protocol
        return result

    def new_session(self, cwd: str, mcp_servers: list[Any] | None = None) -> str:
        """session/new; returns the new session's id."""
        result = self.request("session/new", {"cwd": cwd, "mcpServers": mcp_servers or []})
        sid = as_str(as_dict(result).get("sessionId"))
        if sid is None:
            raise AssertionError(f"session/new answered without a sessionId: {result!r}")
        return sid

    def load(self, session: str, cwd: str, mcp_servers: list[Any] | None = None) -> Any:
        """v1 session/load (the agent replays the history, then answers)."""
        params = {"sessionId": session, "cwd": cwd, "mcpServers": mcp_servers or []}
        return self.request("session/load", params)

    def resume(self, session: str, cwd: str, replay_from: Any = "start") -> Any:
        """v2 session/resume; `replay_from` a cursor type, a cursor object, or None (no
        replay)."""
        params: dict[str, Any] = {"sessionId": session, "cwd": cwd}
        if replay_from is not None:
            cursor = {"type": replay_from} if isinstance(replay_from, str) else replay_from
            params["replayFrom"] = cursor
        return self.request("session/resume", params)

    def prompt(self, session: str, text: str, *, timeout: float | None = None) -> Any:
        """session/prompt with one text block; waits for the end of the turn (v1: the answer;
        v2: the idle state_update after it) and returns the answer's result."""
        seen = len(self.updates(session))
        prompt = [{"type": "text", "text": text}]
        result = self.request("session/prompt", {"sessionId": session, "prompt": prompt},
                              timeout=timeout)  # fmt: skip
        if (self.protocol or 1) >= 2:
            self.wait_for_update(session, "state_update", after=seen, timeout=timeout,
                                 match=lambda u: u.get("state") == "idle")  # fmt: skip
        return result


def _limit(seconds: float, name: str) -> float:
    """`seconds` when it is a wait that ends (finite, above 0, at most a day); else
    ValueError naming it: every wait of the client ends."""
    problem = seconds_problem(name, seconds, zero=False)
    if problem is not None:
        raise ValueError(problem)
    return seconds


def _short(msg: Message) -> str:
    params = as_dict(msg.get("params"))
    kind = as_dict(params.get("update")).get("sessionUpdate")
    what = f" {kind}" if isinstance(kind, str) else ""
    return f"{msg.get('method')}{what}"
