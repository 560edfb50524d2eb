"""An HTTP/1.1 request that asks to go on in HTTP/2 (`Upgrade: h2c`, RFC 7540 3.2; Java's
HttpClient asks so of an http:// URL): the proxy asks the upstream the same (the client's
request line, headers and body; `Host` naming the upstream, `HTTP2-Settings` the proxy's own
connection's) and does what the upstream does. A `101 Switching Protocols` is passed on and
both connections go on in HTTP/2 (h2c.py), the upgraded request stream 1 on both sides and
recorded as any h2c exchange (its `open` says `version: "1.1"`: it came as HTTP/1.1). Any
other answer is passed on byte for byte and recorded as an HTTP/1.1 exchange (h11 reads it);
later requests on the connection go to aiohttp as any HTTP/1.1 connection's, or the
connection is closed after the answer when the upstream's answer closes it.

Taken as an upgrade only with exactly one `HTTP2-Settings`, `Upgrade` in `Connection`, no
`Transfer-Encoding` and no WebSocket; else (and to an upstream behind TLS) the request goes to
aiohttp, which answers in HTTP/1.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import h11
from h2.config import H2Configuration
from h2.connection import H2Connection

from acp_trace.redaction.http import scrub_headers, scrub_target
from acp_trace.remote.h2c import CHUNK, H2Proxy, where_of
from acp_trace.remote.sse import EventParser

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["H2Upgrade", "Head", "h2c_upgrade"]


@dataclass(frozen=True)
class Head:
    """A request head asking for h2c: its line, its headers as sent, its size and its body's."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    size: int
    length: int


def h2c_upgrade(buffer: bytes) -> Head | None:
    """The request head `buffer` starts with, if it asks for h2c as the proxy takes it on."""
    end = buffer.find(b"\r\n\r\n")
    lines = buffer[: max(end, 0)].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if end < 0 or len(parts) != 3 or parts[2] != "HTTP/1.1":
        return None
    headers = [(k, v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]

    def tokens(name: str) -> set[str]:
        return {t.strip().lower() for k, v in headers if k.lower() == name for t in v.split(",")}

    settings = [v for k, v in headers if k.lower() == "http2-settings"]
    lengths = {v for k, v in headers if k.lower() == "content-length"}
    if (
        "h2c" not in tokens("upgrade")
        or "websocket" in tokens("upgrade")
        or "upgrade" not in tokens("connection")
        or len(settings) != 1
        or tokens("transfer-encoding")
        or len(lengths) > 1
        or not all(v.isdigit() for v in lengths)
    ):
        return None
    return Head(parts[0], parts[1], headers, end + 4, int(next(iter(lengths), "0")))


@dataclass
class _Answer:
    """The upstream's HTTP/1.1 answer as it is read (a refused upgrade)."""

    where: dict[str, Any]
    status: int = 0
    parser: EventParser | None = None
    body: bytearray | None = None
    size: int = 0
    ended: bool = False


class H2Upgrade(asyncio.Protocol):
    """One client connection from its `Upgrade: h2c` request until the upstream's answer."""

    def __init__(
        self, client: asyncio.Transport, proxy: Proxy, make_http: Callable[[], asyncio.Protocol]
    ) -> None:
        self.client, self.proxy, self.make_http = client, proxy, make_http
        self.h2 = H2Proxy(client, proxy)  # also the upstream's address
        self.buffer = b""
        self.arrived = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.seen = proxy.now()
        self.answer: _Answer | None = None  # the upstream's HTTP/1.1 answer, once it came
        self.sent: tuple[int, bytes] | None = None  # the request's body and when it was whole

    def start(self, head: Head, first: bytes) -> None:
        self.buffer = first
        self.task = asyncio.ensure_future(self._run(head))
        self.proxy.open_streams.add(self.task)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.arrived.set()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def _run(self, head: Head) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            while len(self.buffer) < head.size + head.length:
                self.arrived.clear()
                await self.arrived.wait()
            body = self.buffer[head.size : head.size + head.length]
            self.buffer = self.buffer[head.size + head.length :]
            t_body = self.proxy.now()
            self.sent = (t_body, body)
            up = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
            settings = (up.initiate_upgrade_connection() or b"").decode()
            parser = h11.Connection(h11.CLIENT)
            try:
                reader, writer = await asyncio.open_connection(self.h2.host, self.h2.port)
                writer.write(self._request(head, parser, settings, body))
                switched = await self._answer(head, parser, reader, (t_body, body))
            except (OSError, h11.ProtocolError) as exc:
                if self.answer is None:
                    self._refused(head, (t_body, body), exc)
                self._cut(exc)
                return
            if switched:  # h2c.py has both connections now
                self._switch(head, (t_body, body), up, parser, (reader, writer))
                writer = None
            elif self.answer is not None:
                self._over(parser)
        except asyncio.CancelledError:  # the client went away, or the recorder stops
            if self.answer is None and self.sent is not None:  # no answer yet: record the ask
                self.answer = self._open(head, self.sent)
            if self.answer is not None:
                self._end({"by": "proxy" if self.proxy.stopping else "client"})
            raise
        finally:
            if self.task is not None:
                self.proxy.open_streams.discard(self.task)
            if writer is not None:
                writer.close()

    def _request(self, head: Head, parser: h11.Connection, settings: str, body: bytes) -> bytes:
        """The upgrade request as it goes upstream (h11 told of it, to read the answer)."""
        out = [f"{head.method} {head.target} HTTP/1.1"]
        for k, v in head.headers:
            value = {"host": f"{self.h2.host}:{self.h2.port}", "http2-settings": settings}
            out.append(f"{k}: {value.get(k.lower(), v)}")
        sent = [(k, v) for k, v in (x.split(": ", 1) for x in out[1:])]
        parser.send(h11.Request(method=head.method, target=head.target, headers=sent))
        if body:
            parser.send(h11.Data(data=body))
        parser.send(h11.EndOfMessage())
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + body

    async def _answer(
        self, head: Head, parser: h11.Connection, reader: asyncio.StreamReader, sent: Any
    ) -> bool:
        """Read the upstream's answer, passing it on as it comes; whether it switched."""
        while True:
            chunk = await reader.read(CHUNK)
            parser.receive_data(chunk)
            while (event := parser.next_event()) not in (h11.NEED_DATA, h11.PAUSED):
                if isinstance(event, h11.Response):
                    self.answer = self._status(head, sent, event)
                elif isinstance(event, h11.Data) and self.answer is not None:
                    self._data(self.answer, event.data)
                elif isinstance(event, h11.EndOfMessage) and self.answer is not None:
                    self.client.write(chunk)
                    self._done(self.answer)
                    return False
                elif isinstance(event, h11.ConnectionClosed):
                    raise h11.RemoteProtocolError("the upstream closed before its answer ended")
            if parser.their_state is h11.SWITCHED_PROTOCOL:
                self.client.write(chunk[: len(chunk) - len(parser.trailing_data[0])])
                return True
            self.client.write(chunk)
            if not chunk:
                raise h11.RemoteProtocolError("the upstream closed before its answer ended")

    def _switch(
        self, head: Head, sent: tuple[int, bytes], up: H2Connection, parser: h11.Connection,
        connected: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:  # fmt: skip
        h2 = self.h2
        settings = next(v for k, v in head.headers if k.lower() == "http2-settings")
        h2.down.initiate_upgrade_connection(settings.encode())
        h2.up, h2.up_pending, h2.pending = up, parser.trailing_data[0], [self.buffer]
        authority = next((v for k, v in head.headers if k.lower() == "host"), "")
        pseudo = [(":method", head.method), (":scheme", "http"), (":authority", authority)]
        h2.track(1, 1, [*pseudo, (":path", head.target), *head.headers], True, t=self.seen,
                 version="1.1")  # fmt: skip
        if sent[1]:
            self.proxy.writer.message(sent[0], "client", sent[1], h2.streams[1].where)
        self.client.set_protocol(h2)
        h2.upgraded(*connected)

    # ------------------------------------------------------------ a refused upgrade

    def _open(self, head: Head, sent: tuple[int, bytes]) -> _Answer:
        fields = {k.lower(): v for k, v in head.headers}
        where = {**where_of(head.method, fields, self.proxy.next_exchange()), "transport": "http"}
        exchange = where["exchange"]
        if "acp_connection" in where:
            self.proxy.writer.bind(exchange, where["acp_connection"])
        elif head.method == "POST":
            self.proxy.writer.hold(exchange)
        else:
            self.proxy.writer.bind(exchange, None)
        self.proxy.writer.event(
            self.seen, "open", **where, method=head.method, target=scrub_target(head.target),
            version="1.1", headers=scrub_headers(head.headers, content=self.proxy.content),
        )  # fmt: skip
        if sent[1]:
            self.proxy.writer.message(sent[0], "client", sent[1], where)
        return _Answer(where)

    def _status(self, head: Head, sent: tuple[int, bytes], response: h11.Response) -> _Answer:
        answer = self._open(head, sent)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers]
        fields = {k.lower(): v for k, v in headers}
        sse = fields.get("content-type", "").startswith("text/event-stream")
        answer.status, answer.parser = response.status_code, EventParser() if sse else None
        answer.body = None if sse else bytearray()
        exchange = answer.where["exchange"]
        self.proxy.writer.event(
            self.proxy.now(), "status", exchange=exchange, status=answer.status, sse=sse,
            headers=scrub_headers(headers, content=self.proxy.content),
        )  # fmt: skip
        if (found := fields.get("acp-connection-id")) and "acp_connection" not in answer.where:
            answer.where = {**answer.where, "acp_connection": found}
        self.proxy.writer.bind(exchange, answer.where.get("acp_connection"))
        return answer

    def _data(self, answer: _Answer, data: bytes) -> None:
        answer.size += len(data)
        if answer.body is not None:
            if len(answer.body) < self.proxy.writer.max_record_bytes:
                answer.body += data
            return
        assert answer.parser is not None
        for event in answer.parser.feed(data):
            where = answer.where if event.id is None else {**answer.where, "sse_id": event.id}
            self.proxy.writer.message(self.proxy.now(), "agent", event.data, where)

    def _done(self, answer: _Answer) -> None:
        if answer.body and 200 <= answer.status < 300:
            self.proxy.writer.message(self.proxy.now(), "agent", bytes(answer.body), answer.where)
        self._end({"by": "agent"})

    def _over(self, parser: h11.Connection) -> None:
        """The answer was passed on: later requests go to aiohttp, unless it closes."""
        if parser.their_state is not h11.DONE or parser.our_state is not h11.DONE:
            self.client.close()
            return
        http = self.make_http()
        self.client.set_protocol(http)
        http.connection_made(self.client)
        if self.buffer:
            http.data_received(self.buffer)

    def _refused(self, head: Head, sent: tuple[int, bytes], exc: Exception) -> None:
        """The upstream could not be reached or answered no HTTP: the client gets a 502."""
        answer = self._open(head, sent)
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        exchange = answer.where["exchange"]
        self.proxy.writer.event(self.proxy.now(), "upstream_error", exchange=exchange, error=reason)
        self.proxy.writer.bind(exchange, answer.where.get("acp_connection"))
        text = f"acp-trace: upstream: {reason}\n".encode()
        self.client.write(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)
        )
        answer.ended = True
        self.answer = answer

    def _cut(self, exc: Exception) -> None:
        self._end({"by": "agent", "cut": True, "reason": f"{type(exc).__name__}: {exc}"})
        self.client.close()

    def _end(self, how: dict[str, Any]) -> None:
        answer = self.answer
        if answer is None or answer.ended:
            return
        answer.ended = True
        fields: dict[str, Any] = {"exchange": answer.where["exchange"], **how}
        fields["bytes"] = answer.size
        if answer.parser is not None:
            fields["keepalives"] = answer.parser.keepalives
        self.proxy.writer.event(self.proxy.now(), "end", **fields)
