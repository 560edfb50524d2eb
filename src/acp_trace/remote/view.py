"""What of the proxy (proxy.py) the parts it hands a request to see (websocket.py, relay.py):
a Protocol, so that they need not import the proxy that imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    import aiohttp
    from aiohttp import web
    from multidict import CIMultiDict

    from acp_trace.remote.writer import RemoteWriter

__all__ = ["Proxy"]


class Proxy(Protocol):
    """The proxy as a WebSocket and a response relay use it."""

    session: aiohttp.ClientSession | None
    origin: str
    writer: RemoteWriter
    content: bool
    stopping: bool
    open_streams: set[asyncio.Task[Any]]

    def now(self) -> int: ...

    def next_exchange(self) -> int: ...

    def opened(self, request: web.Request, exchange: int, where: dict[str, Any]) -> None: ...

    def forward_headers(self, request: web.Request, skip: frozenset[str]) -> CIMultiDict[str]: ...
