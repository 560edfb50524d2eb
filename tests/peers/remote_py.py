"""A remote ACP agent and client on the official Python SDK (agent-client-protocol 1.0.0rc3
with its `http` extra: `acp.http` on Starlette, served by uvicorn 0.55.0; `acp.ws`), for the
remote recorder's peer tests. Run with the SDK's own interpreter (remotelib installs it).

usage: python remote_py.py server [h2c]
         (h2c: served by hypercorn, HTTP/2 with prior knowledge, else by uvicorn) listens on 127.0.0.1 (a free port, printed as `{"port": N}`), /acp for both
         transports, until SIGTERM. The agent (v2) is remote_ts.mjs's: sessions keep their
         turns; a resume with replayFrom start replays them, sends replay_complete, a
         state_update snapshot, then answers. A prompt `cut` makes the next replay stop after
         its first update by ending the process (a stream cut mid-replay).
       python remote_py.py client URL http|ws|h2c
         initialize, session/new, one prompt turn, a replaying session/resume; one JSON line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from typing import Any

from acp.experimental import v2
from acp.experimental.negotiation import AgentProtocolRouter
from acp.experimental.v2 import schema

SESSIONS: dict[str, dict[str, Any]] = {}


class Agent:
    def __init__(self, conn: v2.AgentSideConnection) -> None:
        self.conn = conn

    async def update(self, sid: str, update: dict[str, Any]) -> None:
        await self.conn.session_update(session_id=sid, update=update)

    async def initialize(
        self, protocol_version: int, info: Any, capabilities: Any = None, **kw: Any
    ) -> Any:
        return schema.InitializeResponse.model_validate(
            {
                "protocolVersion": 2,
                "info": {"name": "remote-py-agent", "version": "1.0.0"},
                "capabilities": {"session": {}},
            }
        )

    async def new_session(self, cwd: str, **kw: Any) -> Any:
        sid = f"sess-py-{len(SESSIONS) + 1}"
        SESSIONS[sid] = {"turns": [], "cut": False}
        return schema.NewSessionResponse.model_validate({"sessionId": sid})

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> Any:
        session = SESSIONS[session_id]
        text = "".join(getattr(block, "text", "") for block in prompt)
        n = len(session["turns"])
        session["turns"].append(text)
        session["cut"] = text == "cut"
        asyncio.get_running_loop().call_later(
            0.005, lambda: asyncio.ensure_future(self._turn(session_id, n, text))
        )
        return schema.PromptResponse.model_validate({"messageId": f"{session_id}-u{n}"})

    async def _turn(self, sid: str, n: int, text: str) -> None:
        await self.update(sid, {"sessionUpdate": "state_update", "state": "running"})
        chunk = {"type": "text", "text": f"echo: {text}"}
        await self.update(
            sid,
            {"sessionUpdate": "agent_message_chunk", "messageId": f"{sid}-a{n}", "content": chunk},
        )
        await self.update(
            sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        )

    async def resume_session(
        self, session_id: str, cwd: str, replay_from: Any = None, **kw: Any
    ) -> Any:
        session = SESSIONS[session_id]
        if replay_from is not None:
            for n, text in enumerate(session["turns"]):
                content = [{"type": "text", "text": text}]
                await self.update(
                    session_id,
                    {
                        "sessionUpdate": "user_message",
                        "messageId": f"{session_id}-u{n}",
                        "content": content,
                    },
                )
                if session["cut"]:
                    await asyncio.sleep(0.05)
                    os.kill(os.getpid(), signal.SIGKILL)  # the server dies mid-replay
                reply = [{"type": "text", "text": f"echo: {text}"}]
                await self.update(
                    session_id,
                    {
                        "sessionUpdate": "agent_message",
                        "messageId": f"{session_id}-a{n}",
                        "content": reply,
                    },
                )
            await self.update(session_id, {"sessionUpdate": "replay_complete"})
        await self.update(session_id, {"sessionUpdate": "state_update", "state": "idle"})
        return schema.ResumeSessionResponse.model_validate({})


async def server(h2c: bool) -> None:
    from acp.http.asgi import create_asgi_app

    app = create_asgi_app(AgentProtocolRouter(v2=Agent))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    if h2c:  # hypercorn speaks HTTP/2 with prior knowledge on a clear-text socket
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        sock.close()
        config = Config()
        config.bind = [f"127.0.0.1:{port}"]
        config.loglevel = "WARNING"
        print(json.dumps({"port": port}), flush=True)
        await serve(app, config)  # type: ignore[arg-type]
        return
    import uvicorn

    print(json.dumps({"port": port}), flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="websockets-sansio")
    await uvicorn.Server(config).serve(sockets=[sock])


class Client:
    def __init__(self) -> None:
        self.updates: list[str] = []
        self.idle = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        kind = getattr(update, "session_update", None) or update.model_dump(by_alias=True).get(
            "sessionUpdate"
        )
        self.updates.append(kind)
        if kind == "state_update" and getattr(update, "stop_reason", None):
            self.idle.set()


async def client(url: str, transport: str) -> None:
    if transport == "ws":
        from acp.ws import create_websocket_stream

        stream = await create_websocket_stream(url)
    elif transport == "h2c":  # HTTP/2 with prior knowledge, as Java's client tries first
        import httpx2
        from acp.http import create_http_stream

        client = httpx2.AsyncClient(http1=False, http2=True, timeout=httpx2.Timeout(None))
        stream = create_http_stream(url, client=client)
    else:
        from acp.http import create_http_stream

        stream = create_http_stream(url)
    handler = Client()
    conn = v2.connect_to_agent(handler, stream)
    out: dict[str, Any] = {"transport": transport, "exchanges": []}

    async def call(method: str, coro: Any) -> Any:
        exchange: dict[str, Any] = {"method": method}
        try:
            result = await asyncio.wait_for(coro, 30)
            exchange["result"] = (
                result.model_dump(by_alias=True, exclude_none=True) if result else None
            )
        except Exception as exc:  # what the SDK raised is the outcome (a cut stream)
            exchange["error"] = f"{type(exc).__name__}: {exc}"
            result = None
        out["exchanges"].append(exchange)
        return result

    info = schema.Implementation(name="remote-py-client", version="1.0.0")
    await call("initialize", conn.initialize(protocol_version=2, info=info))
    created = await call("session/new", conn.new_session(cwd="/home/user/project"))
    sid = created.session_id
    prompt = [schema.TextContentBlock(type="text", text=os.environ.get("REMOTE_PROMPT", "hello"))]
    await call("session/prompt", conn.prompt(session_id=sid, prompt=prompt))
    await asyncio.wait_for(handler.idle.wait(), 30)
    start = schema.ReplayFromStartVariant(type="start")
    await call(
        "session/resume",
        conn.resume_session(session_id=sid, cwd="/home/user/project", replay_from=start),
    )
    out["updates"] = handler.updates
    out["sessionId"] = sid
    print(json.dumps(out), flush=True)
    with contextlib.suppress(Exception):  # a cut connection may not close cleanly
        await asyncio.wait_for(conn.close(), 10)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(server(sys.argv[2:] == ["h2c"]))
    else:
        asyncio.run(client(sys.argv[2], sys.argv[3]))
