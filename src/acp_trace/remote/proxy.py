"""The reverse proxy (aiohttp): every request on the listen address goes to the upstream's
origin with its path and query as they came; each HTTP exchange and WebSocket is numbered
(`exchange`) and what travelled on it is handed to the writer with the stamp the proxy took
when it saw it (docs/trace-format.md, "Remote recordings").

HTTP: a request body is read whole (a POST carries one JSON-RPC message, useless to the agent
before its end), stamped, queued for the record and sent on; a response is passed on chunk
by chunk as it arrives (`iter_any`), SSE events cut out of the chunks for the record only.
WebSocket: each frame is passed on as it arrives, text frames byte for byte (`decode_text`
off, `send_frame`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from acp_trace.redaction.http import scrub_headers, scrub_target
from acp_trace.remote.relay import Relay
from acp_trace.remote.sse import EventParser
from acp_trace.remote.websocket import relay_websocket
from acp_trace.remote.writer import RemoteWriter

__all__ = ["Proxy"]

# Hop-by-hop headers (RFC 9110 7.6.1) and what aiohttp sets itself: never forwarded.
HOP = frozenset(
    h.lower()
    for h in (
        *("Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding"),
        *("Upgrade", "Host", "Content-Length"),
    )
)
SESSION_HEADER = "Acp-Session-Id"
CONNECTION_HEADER = "Acp-Connection-Id"


class Proxy:
    """One recording's proxy: `handle` is the aiohttp handler of every path."""

    def __init__(self, origin: str, writer: RemoteWriter, t0: int, *, content: bool = True) -> None:
        self.origin = origin.rstrip("/")  # scheme://host:port of the upstream (http or https)
        self.writer = writer
        self.t0 = t0
        self.content = content
        self.session: aiohttp.ClientSession | None = None
        self._exchanges = itertools.count(1)
        self._streams: dict[tuple[str | None, str | None], int] = {}
        self.stopping = False  # set when the recorder stops: what closes now, the proxy closed
        self.open_streams: set[asyncio.Task[Any]] = set()  # SSE and WebSocket handlers

    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    async def start(self) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None, sock_connect=30)
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        self.session = aiohttp.ClientSession(
            auto_decompress=False, timeout=timeout, connector=connector, cookie_jar=_NoCookies()
        )

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()

    def next_exchange(self) -> int:
        return next(self._exchanges)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        exchange = self.next_exchange()
        if request.headers.get("Upgrade", "").lower() == "websocket":
            with self.streaming():
                return await relay_websocket(self, request, exchange)
        return await self._http(request, exchange)

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """The current handler holds a stream open (SSE, WebSocket): the recorder's stop
        closes it at once instead of waiting the grace period for it."""
        task = asyncio.current_task()
        assert task is not None
        self.open_streams.add(task)
        try:
            yield
        finally:
            self.open_streams.discard(task)

    async def stop_streams(self) -> None:
        """Close every open stream (the recorder stops); each `close` says `by: proxy`."""
        self.stopping = True
        tasks = list(self.open_streams)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def opened(self, request: web.Request, exchange: int, where: dict[str, Any]) -> None:
        """The `request` event: what was asked, its headers redacted."""
        self.writer.event(
            self.now(),
            "open",
            **where,
            method=request.method,
            target=scrub_target(request.path_qs),
            version=f"{request.version.major}.{request.version.minor}",
            headers=scrub_headers(list(request.headers.items()), content=self.content),
        )

    def forward_headers(
        self, request: web.Request, skip: frozenset[str] = frozenset()
    ) -> CIMultiDict[str]:
        return CIMultiDict(
            (k, v) for k, v in request.headers.items() if k.lower() not in HOP | skip
        )

    # ------------------------------------------------------------ HTTP

    async def _http(self, request: web.Request, exchange: int) -> web.StreamResponse:
        where = _where(request, exchange)
        if "acp_connection" in where:
            self.writer.bind(exchange, where["acp_connection"])
        elif request.method == "POST":  # an initialize: its answer names the connection
            self.writer.hold(exchange)
        else:
            self.writer.bind(exchange, None)
        self.opened(request, exchange, where)
        self._reconnect(request, where)
        body = await request.read()
        if body:
            self.writer.message(self.now(), "client", body, where)
        assert self.session is not None
        try:
            upstream = await self.session.request(
                request.method,
                self.origin + request.path_qs,
                headers=self.forward_headers(request),
                data=body if body else None,
                allow_redirects=False,
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
            )
        except (aiohttp.ClientError, OSError) as exc:
            self.writer.event(self.now(), "upstream_error", exchange=exchange, error=_reason(exc))
            self.writer.bind(exchange, where.get("acp_connection"))
            return web.Response(status=502, text=f"acp-trace: upstream: {_reason(exc)}\n")
        async with upstream:
            return await self._respond(request, upstream, where)

    def _reconnect(self, request: web.Request, where: dict[str, Any]) -> None:
        """A GET for a stream seen before (same connection and session ids) is a reconnect."""
        if request.method != "GET":
            return
        key = (where.get("acp_connection"), where.get("acp_session"))
        previous = self._streams.get(key)
        self._streams[key] = where["exchange"]
        if previous is not None:
            last = request.headers.get("Last-Event-ID")
            extra = {"last_event_id": last} if last is not None else {}
            self.writer.event(self.now(), "reconnect", **where, previous=previous, **extra)

    async def _respond(
        self, request: web.Request, upstream: aiohttp.ClientResponse, where: dict[str, Any]
    ) -> web.StreamResponse:
        exchange = where["exchange"]
        headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in HOP]
        sse = upstream.headers.get("Content-Type", "").startswith("text/event-stream")
        if (found := upstream.headers.get(CONNECTION_HEADER)) and "acp_connection" not in where:
            where = {**where, "acp_connection": found}
        self.writer.event(
            self.now(),
            "status",
            exchange=exchange,
            status=upstream.status,
            sse=sse,
            headers=scrub_headers(headers, content=self.content),
        )
        self.writer.bind(exchange, where.get("acp_connection"))
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for k, v in headers:
            response.headers.add(k, v)
        if upstream.headers.get("Content-Length") is not None:
            response.content_length = int(upstream.headers["Content-Length"])
        await response.prepare(request)
        relay = Relay(self, where, upstream, EventParser() if sse else None)
        if sse:
            with self.streaming():
                await relay.run(request, upstream, response)
        else:
            await relay.run(request, upstream, response)
        return response


def _where(request: web.Request, exchange: int) -> dict[str, Any]:
    """Where a message travelled: the transport, the channel (`post`, `connection` or
    `session` stream, `delete`, `other`), the exchange and the ACP ids its headers carry."""
    channel = "other"
    if request.method == "POST":
        channel = "post"
    elif request.method == "GET":
        channel = "session" if request.headers.get(SESSION_HEADER) else "connection"
    elif request.method == "DELETE":
        channel = "delete"
    where: dict[str, Any] = {"transport": "http", "channel": channel, "exchange": exchange}
    if found := request.headers.get(CONNECTION_HEADER):
        where["acp_connection"] = found
    if found := request.headers.get(SESSION_HEADER):
        where["acp_session"] = found
    return where


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _NoCookies(aiohttp.DummyCookieJar):
    """Cookies pass through as headers; the proxy keeps none of its own."""
