"""What a connection to the proxy speaks, told from its first bytes: HTTP/1.1 (and WebSocket
upgrades) go to aiohttp; HTTP/2 with prior knowledge (h2c: the connection preface
`PRI * HTTP/2.0`) goes to h2c.py, which speaks h2c on both sides (aiohttp speaks no HTTP/2),
so a client that speaks h2c to the agent still does; a first request that asks to upgrade to
h2c (`Upgrade: h2c`, told from its head) goes to h2c_upgrade.py, which asks the upstream the
same and goes on as it answers. An upstream behind TLS is not reached
over h2c: such a connection is closed, and its `open` and `end` events say why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["PREFACE", "Sniffer"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_HEAD = 1 << 16  # a longer first head is not looked at: aiohttp takes it as it comes


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
            self._h2c()
            return
        if b"\r\n\r\n" not in self.buffer and len(self.buffer) < MAX_HEAD:
            return  # an HTTP/1.1 head: wait for its end, to see whether it asks for h2c
        if urlsplit(self.proxy.origin).scheme == "http":
            from acp_trace.remote.h2c_upgrade import H2Upgrade, h2c_upgrade

            if (head := h2c_upgrade(self.buffer)) is not None:
                upgrade = H2Upgrade(self.transport, self.proxy, self.make_http)
                self.transport.set_protocol(upgrade)
                upgrade.start(head, self.buffer)
                return
        http = self.make_http()
        self.transport.set_protocol(http)
        http.connection_made(self.transport)
        http.data_received(self.buffer)

    def eof_received(self) -> bool | None:
        if self.transport is not None:
            self.transport.close()
        return None

    def _h2c(self) -> None:
        assert self.transport is not None
        if urlsplit(self.proxy.origin).scheme != "http":
            exchange = self.exchange()
            self.proxy.writer.bind(exchange, None)
            where = {"transport": "h2c", "channel": "other", "exchange": exchange}
            self.proxy.writer.event(
                self.proxy.now(), "open", **where, method="PRI", target="*", headers=[]
            )
            reason = "h2c cannot go on to an upstream behind TLS (https): the connection was closed"
            self.proxy.writer.event(
                self.proxy.now(), "end", exchange=exchange, by="proxy", reason=reason
            )
            self.transport.close()
            return
        from acp_trace.remote.h2c import H2Proxy

        h2 = H2Proxy(self.transport, self.proxy)
        self.transport.set_protocol(h2)
        h2.start(self.buffer)
