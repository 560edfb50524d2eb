"""Build small v1 traces in tests: a message per call, time advancing by `dt` milliseconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


class TraceBuilder:
    """Accumulates the lines of one trace; `write(path)` saves it, `lines` shows it."""

    def __init__(
        self,
        protocol: int | None = 2,
        agent: str = "test-agent",
        version: str = "1.0",
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        """`capabilities`: the client's initialize capabilities (v1 `clientCapabilities`,
        v2 `capabilities`); none sent when None."""
        self.lines: list[bytes] = [
            orjson.dumps(
                {
                    "acp_trace": 1,
                    "kind": "header",
                    "started_at": "2026-11-30T10:00:00.000000Z",
                    "command": ["test-agent"],
                    "cwd": "/tmp",
                    "pid": 1,
                    "recorder": "acp-trace test",
                }
            )
        ]
        self.seq = 0
        self.t_ns = 0
        self.next_id = 0
        if protocol is not None:
            info = "info" if protocol == 2 else "agentInfo"
            params: dict[str, Any] = {"protocolVersion": protocol}
            if capabilities is not None:
                holder = "capabilities" if protocol == 2 else "clientCapabilities"
                params[holder] = capabilities
            rid = self.request("initialize", params)
            self.response(
                rid, {"protocolVersion": protocol, info: {"name": agent, "version": version}}
            )

    def raw(self, src: str, payload: dict[str, Any], dt: float = 1.0) -> int:
        """Append a record with the given payload keys; returns its seq."""
        self.seq += 1
        self.t_ns += int(dt * 1_000_000)
        self.lines.append(orjson.dumps({"seq": self.seq, "t_ns": self.t_ns, "src": src, **payload}))
        return self.seq

    def send(self, src: str, msg: Any, dt: float = 1.0) -> int:
        """Append one message (any JSON value) from `src`."""
        return self.raw(src, {"msg": msg}, dt)

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        id: Any = None,
        src: str = "client",
        dt: float = 1.0,
    ) -> Any:
        """Append a request; returns its id (a fresh integer unless given)."""
        if id is None:
            self.next_id += 1
            id = self.next_id if src == "client" else f"a{self.next_id}"
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(src, msg, dt)
        return id

    def response(self, id: Any, result: Any = None, *, src: str = "agent", dt: float = 1.0) -> int:
        """Append a success response."""
        return self.send(
            src, {"jsonrpc": "2.0", "id": id, "result": result if result is not None else {}}, dt
        )

    def error(
        self, id: Any, code: int, *, src: str = "agent", dt: float = 1.0, data: Any = None
    ) -> int:
        """Append an error response."""
        err: dict[str, Any] = {"code": code, "message": "error"}
        if data is not None:
            err["data"] = data
        return self.send(src, {"jsonrpc": "2.0", "id": id, "error": err}, dt)

    def notify(self, method: str, params: Any, *, src: str = "agent", dt: float = 1.0) -> int:
        """Append a notification."""
        return self.send(src, {"jsonrpc": "2.0", "method": method, "params": params}, dt)

    def update(self, session: str, kind: str, dt: float = 1.0, **fields: Any) -> int:
        """Append a session/update of the given kind on `session`."""
        return self.notify(
            "session/update",
            {"sessionId": session, "update": {"sessionUpdate": kind, **fields}},
            dt=dt,
        )

    def history(
        self, session: str, turns: int, *, message_ids: bool = True, dt: float = 1.0
    ) -> None:
        """Append `turns` replayed turns (a user_message and an agent_message each)."""
        for i in range(turns):
            for kind in ("user_message", "agent_message"):
                extra = {"messageId": f"{session}-{kind}-{i}"} if message_ids else {}
                self.update(
                    session, kind, dt=dt, content=[{"type": "text", "text": f"{kind} {i}"}], **extra
                )

    def marker(self, session: str, dt: float = 1.0) -> int:
        """Append a replay_complete marker."""
        return self.update(session, "replay_complete", dt=dt)

    def state(self, session: str, state: str = "idle", dt: float = 1.0, **fields: Any) -> int:
        """Append a state_update."""
        return self.update(session, "state_update", dt=dt, state=state, **fields)

    def resume(self, session: str, cursor: Any = {"type": "start"}, dt: float = 1.0) -> Any:  # noqa: B006
        """Append a v2 session/resume (cursor None omits replayFrom)."""
        params: dict[str, Any] = {"sessionId": session, "cwd": "/tmp"}
        if cursor is not None:
            params["replayFrom"] = cursor
        return self.request("session/resume", params, dt=dt)

    def load(self, session: str, dt: float = 1.0) -> Any:
        """Append a v1 session/load."""
        return self.request(
            "session/load", {"sessionId": session, "cwd": "/tmp", "mcpServers": []}, dt=dt
        )

    def event(self, event: str, dt: float = 0.0, **fields: Any) -> int:
        """Append a tap event."""
        return self.raw("tap", {"event": event, **fields}, dt)

    def text(self, src: str, text: str, dt: float = 1.0) -> int:
        """Append a text line."""
        return self.raw(src, {"text": text}, dt)

    def write(self, path: Path) -> Path:
        """Save the trace to `path`."""
        path.write_bytes(b"".join(line + b"\n" for line in self.lines))
        return path
