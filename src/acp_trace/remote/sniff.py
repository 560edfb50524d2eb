"""What a connection to the proxy speaks, told from its first bytes: HTTP/1.1 (and WebSocket
upgrades) go to aiohttp; HTTP/2 with prior knowledge (h2c: the connection preface
`PRI * HTTP/2.0`) is passed through to the upstream unchanged, byte for byte, both ways, so a
client that speaks h2c to the agent still does. aiohttp speaks no HTTP/2, so such a
connection is not read for the record: its `open` and `end` events (transport `h2c`, channel
`tunnel`) say that it went by and how many bytes it carried each way. An upstream behind TLS
cannot take a clear-text h2c connection through the proxy: the client's connection is closed
and the `end` event says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["PREFACE", "Sniffer"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CHUNK = 1 << 16


class Sniffer(asyncio.Protocol):
    """One accepted connection until its first bytes tell what it speaks."""

    def __init__(
        self, make_http: Callable[[], asyncio.Protocol], proxy: Proxy, exchange: Callable[[], int]
    ) -> None:
        self.make_http, self.proxy, self.exchange = make_http, proxy, exchange
        self.transport: asyncio.Transport | None = None
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        if len(self.buffer) < len(PREFACE) and PREFACE.startswith(self.buffer):
            return  # it may still be the preface: wait for more
        if self.buffer.startswith(PREFACE):
            tunnel = _Tunnel(self.transport, self.proxy, self.exchange())
            self.transport.set_protocol(tunnel)
            tunnel.start(self.buffer)
            return
        http = self.make_http()
        self.transport.set_protocol(http)
        http.connection_made(self.transport)
        http.data_received(self.buffer)

    def eof_received(self) -> bool | None:
        if self.transport is not None:
            self.transport.close()
        return None


class _Tunnel(asyncio.Protocol):
    """An h2c connection passed through to the upstream as it is."""

    def __init__(self, client: asyncio.Transport, proxy: Proxy, exchange: int) -> None:
        self.client, self.proxy, self.exchange = client, proxy, exchange
        self.sent = {"client": 0, "agent": 0}
        self.upstream: asyncio.StreamWriter | None = None
        self.pending: list[bytes] = []
        self.ended = False
        self.task: asyncio.Task[None] | None = None

    def start(self, first: bytes) -> None:
        self.proxy.writer.bind(self.exchange, None)
        where = {"transport": "h2c", "channel": "tunnel", "exchange": self.exchange}
        self.proxy.writer.event(
            self.proxy.now(), "open", **where, method="PRI", target="*", headers=[]
        )
        self.pending.append(first)
        self.sent["client"] += len(first)
        self.client.pause_reading()  # until the upstream takes it
        self.task = asyncio.ensure_future(self._run())
        self.proxy.open_streams.add(self.task)

    def data_received(self, data: bytes) -> None:
        self.sent["client"] += len(data)
        if self.upstream is None:
            self.pending.append(data)
        else:
            self.upstream.write(data)

    def eof_received(self) -> bool | None:
        if self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()
        return True  # keep the client's side open for the agent's answer

    def connection_lost(self, exc: Exception | None) -> None:
        if self.task is not None and not self.ended:
            self.task.cancel()

    async def _run(self) -> None:
        how: dict[str, Any] = {"by": "agent"}
        parts = urlsplit(self.proxy.origin)
        try:
            if parts.scheme != "http":
                how = {"by": "proxy", "reason": "h2c cannot go through to an upstream behind TLS"}
                return
            reader, self.upstream = await asyncio.open_connection(parts.hostname, parts.port or 80)
            for data in self.pending:
                self.upstream.write(data)
            self.pending = []
            self.client.resume_reading()
            while chunk := await reader.read(CHUNK):
                self.sent["agent"] += len(chunk)
                self.client.write(chunk)
        except asyncio.CancelledError:
            how = {"by": "proxy" if self.proxy.stopping else "client"}
            raise
        except OSError as exc:
            how = {"by": "agent", "reason": f"{type(exc).__name__}: {exc}"}
        finally:
            self._end(how)

    def _end(self, how: dict[str, Any]) -> None:
        self.ended = True
        if self.task is not None:
            self.proxy.open_streams.discard(self.task)
        with suppress(Exception):
            self.client.close()
        if self.upstream is not None:
            with suppress(Exception):
                self.upstream.close()
        fields = {"reason": "h2c passed through unrecorded", **how}
        fields["bytes"] = self.sent["client"] + self.sent["agent"]
        fields["client_bytes"], fields["agent_bytes"] = self.sent["client"], self.sent["agent"]
        self.proxy.writer.event(self.proxy.now(), "end", exchange=self.exchange, **fields)
