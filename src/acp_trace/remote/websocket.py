"""A WebSocket through the proxy: the upstream's handshake first (its refusal, a 426 or a
401, goes back to the client with its status and body), then the client's, then two pumps
that pass every frame on as it arrives. Text frames are JSON-RPC messages (one per frame):
stamped, queued for the record, forwarded byte for byte. Binary frames are forwarded and
counted (ACP ignores them). A close is passed on with its code and reason and recorded as
an `end` event (`by`, `code`, `reason`)."""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
from aiohttp import WSMsgType, web

from acp_trace.redaction.http import scrub_headers

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["relay_websocket"]

# The handshake's own headers: aiohttp makes the upstream's anew.
WS_OWN = frozenset(
    h.lower() for h in ("Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Extensions")
)
# Headers of the upstream's 101 the client gets too (the ACP connection id, cookies).
PASSED_BACK = ("Acp-Connection-Id", "Set-Cookie")


async def relay_websocket(proxy: Proxy, request: web.Request, exchange: int) -> web.StreamResponse:
    where: dict[str, Any] = {"transport": "ws", "channel": "ws", "exchange": exchange}
    proxy.writer.hold(exchange)  # a connection once the agent accepts it (its 101)
    proxy.opened(request, exchange, where)
    protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    skip = WS_OWN | {"sec-websocket-protocol"}
    assert proxy.session is not None
    try:
        agent = await proxy.session.ws_connect(
            proxy.origin.replace("http", "ws", 1) + request.path_qs,
            headers=proxy.forward_headers(request, skip),
            protocols=[p for p in protocols if p],
            autoclose=False,
            max_msg_size=0,
            compress=0,
            decode_text=False,
        )
    except aiohttp.WSServerHandshakeError as exc:
        status = exc.status or 502
        headers = list((exc.headers or {}).items())
        proxy.writer.event(
            proxy.now(), "status", exchange=exchange, status=status, sse=False,
            headers=scrub_headers(headers, content=proxy.content),
        )  # fmt: skip
        proxy.writer.event(proxy.now(), "end", exchange=exchange, by="agent", bytes=0)
        proxy.writer.bind(exchange, None)
        return web.Response(status=status, text=exc.message or "")
    except (aiohttp.ClientError, OSError) as exc:
        proxy.writer.event(
            proxy.now(), "upstream_error", exchange=exchange, error=str(exc) or type(exc).__name__
        )
        proxy.writer.bind(exchange, None)
        return web.Response(status=502, text="acp-trace: the upstream refused the WebSocket\n")
    return await _relay(proxy, request, agent, where)


async def _relay(
    proxy: Proxy,
    request: web.Request,
    agent: aiohttp.ClientWebSocketResponse[Literal[False]],
    where: dict[str, Any],
) -> web.StreamResponse:
    upgrade = agent._response.headers  # the upstream's 101
    if (found := upgrade.get("Acp-Connection-Id")) is not None:
        where = {**where, "acp_connection": found}
    proxy.writer.event(
        proxy.now(), "status", exchange=where["exchange"], status=101, sse=False,
        headers=scrub_headers(list(upgrade.items()), content=proxy.content),
    )  # fmt: skip
    proxy.writer.bind(where["exchange"], where.get("acp_connection") or f"ws-{where['exchange']}")
    client = web.WebSocketResponse(
        protocols=[agent.protocol] if agent.protocol else (),
        autoclose=False,
        max_msg_size=0,
        compress=False,
        decode_text=False,
    )
    for name in PASSED_BACK:
        for value in upgrade.getall(name, ()):
            client.headers.add(name, value)
    await client.prepare(request)
    counts = {"client": 0, "agent": 0}
    pumps = [
        asyncio.ensure_future(_pump(proxy, client, agent, "client", where, counts)),
        asyncio.ensure_future(_pump(proxy, agent, client, "agent", where, counts)),
    ]
    by, code, reason = "proxy", None, ""
    try:
        done, _pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        by, code, reason = next(iter(done)).result()
    except asyncio.CancelledError:  # the recorder stops, or the client's connection ended
        by, code, reason = "proxy", 1001, "the recorder stopped"
        if not proxy.stopping:
            by, code, reason = "client", None, "the client's connection ended"
        raise
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await _close(agent, code, reason)  # one task closes both: no receive() runs now
        await _close(client, code, reason)
        fields: dict[str, Any] = {"exchange": where["exchange"], "by": by, "code": code}
        if reason:
            fields["reason"] = reason
        if counts["client"] or counts["agent"]:
            fields["binary_frames"] = dict(counts)
        proxy.writer.event(proxy.now(), "end", **fields)
    return client


WebSocket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse[Literal[False]]


async def _pump(
    proxy: Proxy,
    source: WebSocket,
    sink: WebSocket,
    src: str,
    where: dict[str, Any],
    counts: dict[str, int],
) -> tuple[str, int | None, str]:
    """Frames from `source` to `sink` until a close; (who closed, code, reason)."""
    while True:
        msg = await source.receive()
        if msg.type == WSMsgType.TEXT:
            data = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
            proxy.writer.message(proxy.now(), src, data, where)
            await sink.send_frame(data, WSMsgType.TEXT)
        elif msg.type == WSMsgType.BINARY:
            counts[src] += 1
            await sink.send_frame(msg.data, WSMsgType.BINARY)
        elif msg.type == WSMsgType.CLOSE:  # a frame without a code reads 0: RFC 6455's 1005
            return src, msg.data or 1005, msg.extra or ""
        else:  # CLOSING, CLOSED, ERROR: the connection went without a close frame
            return src, source.close_code, f"no close frame ({msg.type.name.lower()})"


# Codes a close frame may not carry (RFC 6455 7.4.1): what the proxy sends in their place.
_UNSENDABLE = {None: 1001, 1005: 1000, 1006: 1001, 1015: 1001}


async def _close(ws: WebSocket, code: int | None, reason: str) -> None:
    """Pass a close on: the same code and reason, or where the frame had none or the
    connection ended without one, 1000 or 1001 (the `close` event keeps what happened)."""
    if not ws.closed:
        sent = _UNSENDABLE.get(code, code)
        with suppress(aiohttp.ClientError, OSError, RuntimeError):
            await ws.close(code=sent or 1001, message=reason.encode()[:123])
