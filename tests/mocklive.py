"""An in-process `acp-trace mock` on pipes, and a small client that talks to it (tests/mock/)."""

from __future__ import annotations

import io
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

import orjson

from acp_trace.mock import MockOptions, prepare, run_mock

Answer = Callable[[dict[str, Any]], Any]


class Live:
    """A client connected to `run_mock` in a thread: send lines, read what comes back."""

    def __init__(self, options: MockOptions) -> None:
        mock = prepare(options)
        to_mock_r, self._to_mock = os.pipe()
        self._from_mock, from_mock_w = os.pipe()
        self.errout = io.BytesIO()
        self.code: int | None = None
        reader, writer = open(to_mock_r, "rb"), open(from_mock_w, "wb")  # noqa: SIM115

        def serve() -> None:
            try:
                self.code = run_mock(mock, reader, writer, self.errout)
            finally:
                writer.close()
                reader.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.received: list[Any] = []
        self.raw: list[bytes] = []  # the lines as they came

    def _read(self) -> None:
        with open(self._from_mock, "rb") as stream:
            for line in stream:
                self.lines.put(line)
        self.lines.put(None)

    def send(self, msg: Any) -> None:
        data = msg if isinstance(msg, bytes) else orjson.dumps(msg) + b"\n"
        os.write(self._to_mock, data)

    def next(self, timeout: float = 20) -> Any:
        """The next message (raw bytes for a line that is not JSON); None at the end."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            return None
        self.raw.append(line)
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            msg = line
        self.received.append(msg)
        return msg

    def call(
        self, method: str, params: Any, id: Any = 1, answer: Answer | None = None
    ) -> list[Any]:
        """Send a request; everything received up to and including its response. Agent
        requests are answered by `answer` (its value is the result) or left unanswered."""
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        out = []
        while (msg := self.next()) is not None:
            out.append(msg)
            if isinstance(msg, dict) and "method" in msg and "id" in msg and answer is not None:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)})
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") == id:
                break
        return out

    def close(self) -> int | None:
        """Close the mock's stdin; its exit code once it stopped."""
        os.close(self._to_mock)
        self.thread.join(timeout=20)
        return self.code

    @property
    def stderr(self) -> str:
        return self.errout.getvalue().decode()


def updates(messages: list[Any]) -> list[tuple[str, str]]:
    """(sessionId, sessionUpdate) of the session/update notifications among messages."""
    return [
        (m["params"]["sessionId"], m["params"]["update"]["sessionUpdate"])
        for m in messages
        if isinstance(m, dict) and m.get("method") == "session/update"
    ]


def init(conn: Live, version: int = 2) -> dict[str, Any]:
    """initialize with `version`; the response."""
    return dict(conn.call("initialize", {"protocolVersion": version}, id=0)[-1])
