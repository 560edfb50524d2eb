"""One HTTP response body passed on to the client chunk by chunk as it arrives, unchanged,
and read for the record: SSE events cut out of it (sse.py), any other body taken whole; a
body the agent compressed (`Content-Encoding: gzip` or `deflate`) is decompressed for the
record only (the client gets the bytes as sent). A body in an encoding the recorder cannot
read (`br`, `zstd`) is passed on and not recorded: its `end` event says so (`undecoded`).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from acp_trace.redaction.http import scrub_body
from acp_trace.remote.sse import EventParser, record_response

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["Decoder", "Relay"]

ERROR_BODY_BYTES = 512  # of a non-2xx body, kept (redacted) in its `end` event


@dataclass
class Decoder:
    """A body's content coding undone for the record; `failed` names what could not be."""

    encoding: str = ""
    failed: str = ""
    _zlib: Any = field(default=None, repr=False)

    @classmethod
    def of(cls, header: str) -> Decoder:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if not codings:
            return cls()
        if codings in (["gzip"], ["x-gzip"], ["deflate"]):
            return cls(codings[0], _zlib=zlib.decompressobj(47))  # gzip or zlib, by header
        return cls(", ".join(codings), failed=", ".join(codings))

    def decode(self, chunk: bytes) -> bytes:
        if self.failed:
            return b""
        if self._zlib is None:
            return chunk
        try:
            return bytes(self._zlib.decompress(chunk))
        except zlib.error:
            self.failed = f"{self.encoding} (not decodable)"
            return b""


class Relay:
    """One response body passed on chunk by chunk, its messages handed to the writer."""

    def __init__(
        self,
        proxy: Proxy,
        where: dict[str, Any],
        upstream: aiohttp.ClientResponse,
        parser: EventParser | None,
    ) -> None:
        self.proxy, self.where, self.status, self.parser = proxy, where, upstream.status, parser
        self.body = bytearray()  # a body that is not SSE, for the record
        self.size = 0
        self.now: Callable[[], int] = proxy.now
        self.decoder = Decoder.of(upstream.headers.get("Content-Encoding", ""))

    async def run(
        self, request: web.Request, upstream: aiohttp.ClientResponse, response: web.StreamResponse
    ) -> None:
        fields: dict[str, Any] = {"by": "agent"}
        try:
            async for chunk in upstream.content.iter_any():
                self._seen(self.now(), chunk)
                await response.write(chunk)
            self._done(self.now())
            await response.write_eof()
        except asyncio.CancelledError:
            if self.proxy.stopping:
                fields = {"by": "proxy", "reason": "the recorder stopped"}
            else:
                fields = {"by": "client", "reason": "the client closed the connection"}
            self._closed(fields)
            raise
        except (aiohttp.ClientError, OSError) as exc:
            if isinstance(exc, ConnectionResetError) and response.prepared:
                fields = {"by": "client", "reason": "the client went away"}
            else:  # the agent's side ended mid-body: the client's is cut too, not ended
                fields = {"by": "agent", "cut": True, "reason": _reason(exc)}
                if request.transport is not None:
                    request.transport.close()
        self._closed(fields)

    def _seen(self, t: int, chunk: bytes) -> None:
        self.size += len(chunk)
        chunk = self.decoder.decode(chunk)
        record_response(self.proxy.writer, t, chunk, self.parser, self.body, self.where)

    def _done(self, t: int) -> None:
        if self.parser is None and self.body and 200 <= self.status < 300:
            self.proxy.writer.message(t, "agent", bytes(self.body), self.where)

    def _closed(self, how: dict[str, Any]) -> None:
        fields: dict[str, Any] = {"exchange": self.where["exchange"], **how, "bytes": self.size}
        if self.decoder.failed:
            fields["undecoded"] = (
                self.decoder.failed
            )  # its messages are neither recorded nor counted
        if self.parser is not None:
            fields["keepalives"] = self.parser.keepalives
            if self.parser.pending:
                fields["cut_bytes"] = self.parser.pending  # an event cut short
        if self.parser is None and self.body and not 200 <= self.status < 300:
            text = bytes(self.body[:ERROR_BODY_BYTES]).decode("utf-8", "replace")
            fields["body"] = scrub_body(text, content=self.proxy.content)
        self.proxy.writer.event(self.now(), "end", **fields)


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
