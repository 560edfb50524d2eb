"""The remote recorder under test: `acp-trace record --listen ... --upstream ...` as a process
(so its signals and its exit are the real ones), and a small upstream on aiohttp in a thread of
the test process, which says exactly which bytes it sent (the proxy's mechanics: statuses,
SSE chunking, WebSocket closes; the peers tests run the real SDKs)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import zlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from testpaths import ROOT

READY = re.compile(r" at (\S+):(\d+) \(Ctrl-C ends it\)")
SSE_CHUNKS = [  # the session stream the upstream sends, in these writes
    b": keep-alive\n\n",
    b'id: 1\ndata: {"jsonrpc":"2.0","method":"session/update",',  # an event cut across writes
    b'"params":{"sessionId":"s1","update":{"sessionUpdate":"replay_complete"}}}\n\n',
    b'id: 2\r\ndata: {"jsonrpc":"2.0",\r\ndata: "id":5,"result":{}}\r\n\r\n',  # CRLF, 2 data lines
    b": keep-alive\n\n",
]


@dataclass
class Upstream:
    """The upstream's address and what it saw and sent. Its WebSocket answers each request
    with `{"echo": true}`; the text `close-1008` makes it close with 1008."""

    port: int = 0
    sent: dict[str, bytes] = field(default_factory=dict)
    seen: list[dict[str, Any]] = field(default_factory=list)


async def _post(up: Upstream, request: web.Request) -> web.StreamResponse:
    body = await request.read()
    up.seen.append({"headers": dict(request.headers), "body": body, "path": request.path_qs})
    message = orjson.loads(body)
    if message.get("method") == "initialize":
        answer = orjson.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": 2}}
        )
        up.sent["initialize"] = answer
        return web.Response(
            body=answer, content_type="application/json", headers={"Acp-Connection-Id": "c1"}
        )
    if request.headers.get("Acp-Session-Id") == "wrong":
        return web.json_response({"error": "Missing session id header"}, status=400)
    return web.Response(status=202)


async def _get(up: Upstream, request: web.Request) -> web.StreamResponse:
    if request.path == "/plain-ws":  # as if the endpoint took no WebSocket here
        return web.Response(status=426, text="Upgrade Required")
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return await _websocket(request)
    if request.headers.get("Acp-Session-Id") == "taken":
        return web.json_response({"error": "stream already has a reader"}, status=409)
    gzip = zlib.compressobj(wbits=31) if request.query.get("gzip") else None
    headers = {"Content-Type": "text/event-stream"} | ({"Content-Encoding": "gzip"} if gzip else {})
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    sent = b""
    for chunk in SSE_CHUNKS:
        if gzip is not None:  # each write a whole deflate block: the events arrive one by one
            chunk = gzip.compress(chunk) + gzip.flush(zlib.Z_SYNC_FLUSH)
        await response.write(chunk)
        sent += chunk
        await asyncio.sleep(0.01)
    up.sent["sse"] = sent
    if request.query.get("hold"):  # a stream that stays open until the recorder stops
        await asyncio.sleep(3600)
    await response.write_eof()
    return response


_SOCKETS = iter(range(1, 1 << 30))


async def _websocket(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse()
    ws.headers["Acp-Connection-Id"] = f"w{next(_SOCKETS)}"
    await ws.prepare(request)
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        if msg.data == "close-1008":
            await ws.close(code=1008, message=b"limit")
            break
        request_id = orjson.loads(msg.data).get("id")
        await ws.send_str(f'{{"jsonrpc":"2.0","id":{request_id},"result":{{"echo":true}}}}')
    return ws


@contextmanager
def _serving(
    start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
) -> Iterator[None]:
    """`start` a server on an event loop of a thread of its own; it serves until the block
    ends, then `stop` ends it and the loop."""
    loop = asyncio.new_event_loop()
    started = threading.Event()

    async def begin() -> None:
        await start()
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(begin()), loop.run_forever()))
    thread.start()
    started.wait(30)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


@contextmanager
def upstream() -> Iterator[Upstream]:
    """The upstream, serving on 127.0.0.1 in a thread until the block ends."""
    up = Upstream()
    app = web.Application()

    async def post(request: web.Request) -> web.StreamResponse:
        return await _post(up, request)

    async def get(request: web.Request) -> web.StreamResponse:
        return await _get(up, request)

    app.router.add_post("/{tail:.*}", post)
    app.router.add_get("/{tail:.*}", get)
    runner = web.AppRunner(app, handler_cancellation=True)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        up.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    with _serving(start, runner.cleanup):
        yield up


@dataclass
class Recorder:
    """A running `acp-trace record --listen`; `stop()` sends a signal and waits for it."""

    process: subprocess.Popen[bytes]
    address: str
    trace: Path

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        self.process.send_signal(signum)
        _out, err = self.process.communicate(timeout=60)
        return self.process.returncode, err.decode()

    def records(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.trace.read_bytes().splitlines()]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


@contextmanager
def recorder(upstream_url: str, trace: Path, *extra: str) -> Iterator[Recorder]:
    """The remote recorder on a free port of 127.0.0.1, writing `trace` (a directory: into it
    with --dir)."""
    argv = [sys.executable, "-m", "acp_trace", "record", "--listen", "127.0.0.1:0"]
    where = ["--dir", str(trace)] if trace.is_dir() else ["-o", str(trace)]
    argv += ["--upstream", upstream_url, *where, *extra]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, env=env())
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = READY.search(line)
    if found is None:
        process.kill()
        raise AssertionError(f"the recorder did not start: {line}{process.stderr.read().decode()}")
    running = Recorder(process, f"{found.group(1)}:{found.group(2)}", trace)
    try:
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        process.stderr.close()


class _H2Upstream(asyncio.Protocol):
    """An h2c (prior knowledge) agent endpoint: a POST of a request is answered 200 with a
    JSON-RPC result (and `acp-connection-id: h1`), a GET with the test SSE stream, one DATA
    frame per chunk."""

    def __init__(self, up: Upstream, upgrade: bool = False) -> None:
        from h2.config import H2Configuration
        from h2.connection import H2Connection

        self.up = up
        self.head: bytes | None = b"" if upgrade else None  # an `Upgrade: h2c` request first
        self.conn = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.bodies: dict[int, bytes] = {}
        self.methods: dict[int, str] = {}
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.head is None:
            self.conn.initiate_connection()
            transport.write(self.conn.data_to_send())

    def _upgrade(self, data: bytes) -> bytes | None:
        """Take the upgrade request; once whole, switch (answered as stream 1). The rest."""
        assert self.head is not None and self.transport is not None
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.head[:end].decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        size = end + 4 + int(headers.get("Content-Length", "0"))
        if len(self.head) < size:
            return None
        self.up.seen.append({"line": lines[0], "headers": headers, "body": self.head[end + 4 :]})
        self.transport.write(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
        )
        self.conn.initiate_upgrade_connection(headers["HTTP2-Settings"].encode())
        self.methods[1], self.bodies[1] = lines[0].split(" ")[0], self.head[end + 4 : size]
        self._answer(1)
        rest, self.head = self.head[size:], None
        return rest

    def data_received(self, data: bytes) -> None:
        from h2.events import DataReceived, RequestReceived, StreamEnded

        if self.head is not None:
            rest = self._upgrade(data)
            if rest is None:
                return
            data = rest
        for event in self.conn.receive_data(data):
            if isinstance(event, RequestReceived):
                self.methods[event.stream_id] = dict(event.headers)[":method"]
                self.bodies[event.stream_id] = b""  # answered at its StreamEnded
            elif isinstance(event, DataReceived):
                self.bodies[event.stream_id] += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                self._answer(event.stream_id)
        assert self.transport is not None
        self.transport.write(self.conn.data_to_send())

    def _answer(self, sid: int) -> None:
        if self.methods[sid] == "POST":
            request_id = orjson.loads(self.bodies[sid]).get("id")
            body = f'{{"jsonrpc":"2.0","id":{request_id},"result":{{"h2":true}}}}'.encode()
            self.up.sent[f"h2-post-{sid}"] = body
            headers = [
                (":status", "200"),
                ("content-type", "application/json"),
                ("acp-connection-id", "h1"),
            ]
            self.conn.send_headers(sid, headers)
            self.conn.send_data(sid, body, end_stream=True)
            return
        self.conn.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
        for chunk in SSE_CHUNKS:
            self.conn.send_data(sid, chunk)
        self.conn.end_stream(sid)
        self.up.sent["h2-sse"] = b"".join(SSE_CHUNKS)


@contextmanager
def h2_upstream(upgrade: bool = False) -> Iterator[Upstream]:
    """An h2c upstream on 127.0.0.1, in a thread until the block ends (`upgrade`: its
    connections start with an HTTP/1.1 `Upgrade: h2c` request, answered 101)."""
    up = Upstream()
    servers: list[asyncio.AbstractServer] = []

    async def start() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _H2Upstream(up, upgrade), "127.0.0.1", 0)
        servers.append(server)
        up.port = server.sockets[0].getsockname()[1]

    async def stop() -> None:
        servers[0].close()

    with _serving(start, stop):
        yield up
