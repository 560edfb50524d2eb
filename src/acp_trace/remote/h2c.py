"""HTTP/2 without TLS (h2c, prior knowledge) through the proxy, on both sides: the client's
connection is an HTTP/2 server connection, the upstream's an HTTP/2 client connection (the
sans-IO `h2` of python-hyper, in the `remote` extra), each client stream forwarded as one
upstream stream as it arrives (headers, every DATA frame, the end), each answer back the same
way. So a client and an agent that speak h2c still do through the proxy, and what travels is
recorded as over HTTP/1.1: `transport: "h2c"`, the channels and events of proxy.py, SSE events
cut out of the DATA frames (docs/trace-format.md, "Remote recordings"). A body's content
coding is not undone here (gzip over h2c is recorded as it came).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RequestReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from h2.exceptions import H2Error

from acp_trace.redaction.http import scrub_headers, scrub_target
from acp_trace.remote.sse import EventParser, record_response

if TYPE_CHECKING:
    from acp_trace.remote.view import Proxy

__all__ = ["CHUNK", "H2Proxy", "where_of"]

CHUNK = 1 << 16


@dataclass
class _Stream:
    """One client stream and the upstream stream it became."""

    down: int
    up: int
    where: dict[str, Any]
    body: bytearray = field(default_factory=bytearray)  # the request's, then the response's
    to_up: bytearray = field(default_factory=bytearray)
    to_down: bytearray = field(default_factory=bytearray)
    end_up: bool = False  # the request ended: end the upstream stream once sent
    up_closed: bool = False  # the request's headers ended it already
    end_down: bool = False
    status: int = 0
    parser: EventParser | None = None
    size: int = 0
    done: bool = False


class H2Proxy(asyncio.Protocol):
    """One h2c client connection and its upstream connection."""

    def __init__(self, client: asyncio.Transport, proxy: Proxy) -> None:
        self.client, self.proxy = client, proxy
        self.down = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.up = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.streams: dict[int, _Stream] = {}
        self.by_up: dict[int, _Stream] = {}
        self.pending: list[bytes] = []
        self.up_pending = b""  # the upstream's first HTTP/2 bytes after an upgrade's 101
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task[None] | None = None
        origin = urlsplit(proxy.origin)
        self.host, self.port = origin.hostname or "", origin.port or 80

    def start(self, first: bytes) -> None:
        self.pending.append(first)
        self.task = asyncio.ensure_future(self._run())
        self.proxy.open_streams.add(self.task)

    # ------------------------------------------------------------ the client's side

    def data_received(self, data: bytes) -> None:
        if self.writer is None:
            self.pending.append(data)
            return
        try:
            events = self.down.receive_data(data)
        except H2Error:
            self.client.close()
            return
        for event in events:
            self._client_event(event)
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def _client_event(self, event: Any) -> None:
        if isinstance(event, RequestReceived):
            self._request(event.stream_id, _text(event.headers), event.stream_ended is not None)
        elif isinstance(event, DataReceived) and (s := self.streams.get(event.stream_id)):
            s.body += event.data
            s.to_up += event.data
            self.down.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, StreamEnded) and (s := self.streams.get(event.stream_id)):
            s.end_up = not s.up_closed
            if s.body:
                self.proxy.writer.message(self.proxy.now(), "client", bytes(s.body), s.where)
            s.body = bytearray()
        elif isinstance(event, StreamReset) and (s := self.streams.get(event.stream_id)):
            with suppress(H2Error):
                self.up.reset_stream(s.up, event.error_code)
            self._end(
                s, {"by": "client", "reason": f"the client reset the stream ({event.error_code})"}
            )
        elif isinstance(event, WindowUpdated):
            pass  # _send flushes what waits
        elif isinstance(event, ConnectionTerminated):
            self.client.close()

    def _request(self, sid: int, headers: list[tuple[str, str]], ended: bool) -> None:
        s = self.track(sid, self.up.get_next_available_stream_id(), headers, ended)
        authority = f"{self.host}:{self.port}"
        forwarded = [(k, authority if k == ":authority" else v) for k, v in headers]
        self.up.send_headers(s.up, forwarded, end_stream=ended)

    def track(
        self, sid: int, up: int, headers: list[tuple[str, str]], ended: bool, **seen: Any
    ) -> _Stream:
        """Client stream `sid` goes on as upstream stream `up`: its `open` recorded (stamped
        `seen["t"]` if given, of `seen["version"]`, else now and "2")."""
        fields = {k.lower(): v for k, v in headers}
        method, path = fields.get(":method", ""), fields.get(":path", "")
        where = where_of(method, fields, self.proxy.next_exchange())
        exchange = where["exchange"]
        if "acp_connection" in where:
            self.proxy.writer.bind(exchange, where["acp_connection"])
        elif method == "POST":
            self.proxy.writer.hold(exchange)
        else:
            self.proxy.writer.bind(exchange, None)
        plain = [(k, v) for k, v in headers if not k.startswith(":")]
        self.proxy.writer.event(
            seen.get("t", self.proxy.now()), "open", **where, method=method,
            target=scrub_target(path), version=seen.get("version", "2"),
            headers=scrub_headers(plain, content=self.proxy.content),
        )  # fmt: skip
        s = self.streams[sid] = self.by_up[up] = _Stream(sid, up, where, up_closed=ended)
        return s

    # ------------------------------------------------------------ the agent's side

    def _agent_event(self, event: Any) -> None:
        s = self.by_up.get(getattr(event, "stream_id", -1))
        if isinstance(event, ResponseReceived) and s is not None:
            self._response(s, _text(event.headers), event.stream_ended is not None)
        elif isinstance(event, DataReceived) and s is not None:
            self._data(s, event.data)
            self.up.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, (StreamEnded, TrailersReceived)) and s is not None:
            s.end_down = True
            if s.parser is None and s.body and 200 <= s.status < 300:
                self.proxy.writer.message(self.proxy.now(), "agent", bytes(s.body), s.where)
        elif isinstance(event, StreamReset) and s is not None:
            with suppress(H2Error):
                self.down.reset_stream(s.down, event.error_code)
            self._end(s, {"by": "agent", "cut": True, "reason": f"reset ({event.error_code})"})
        elif isinstance(event, ConnectionTerminated):
            self.client.close()

    def _response(self, s: _Stream, headers: list[tuple[str, str]], ended: bool) -> None:
        fields = dict(headers)
        s.status = int(fields.get(":status", "0"))
        sse = fields.get("content-type", "").startswith("text/event-stream")
        s.parser = EventParser() if sse else None
        plain = [(k, v) for k, v in headers if not k.startswith(":")]
        exchange = s.where["exchange"]
        self.proxy.writer.event(
            self.proxy.now(), "status", exchange=exchange, status=s.status, sse=sse,
            headers=scrub_headers(plain, content=self.proxy.content),
        )  # fmt: skip
        if (found := fields.get("acp-connection-id")) and "acp_connection" not in s.where:
            s.where = {**s.where, "acp_connection": found}
        self.proxy.writer.bind(exchange, s.where.get("acp_connection"))
        self.down.send_headers(s.down, headers, end_stream=ended)
        if ended:
            self._end(s, {"by": "agent"})

    def _data(self, s: _Stream, data: bytes) -> None:
        t = self.proxy.now()
        s.size += len(data)
        s.to_down += data
        record_response(self.proxy.writer, t, data, s.parser, s.body, s.where)

    # ------------------------------------------------------------ moving bytes

    def upgraded(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Go on from an `Upgrade: h2c` (h2c_upgrade.py): both connections are upgraded,
        stream 1 tracked; what the client and the upstream sent after the 101 waits in
        `pending` and `up_pending`."""
        self.task = asyncio.ensure_future(self._run((reader, writer)))
        self.proxy.open_streams.add(self.task)

    async def _run(
        self, connected: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    ) -> None:
        how: dict[str, Any] = {"by": "agent"}
        try:
            if connected is not None:
                reader, self.writer = connected
            else:
                reader, self.writer = await asyncio.open_connection(self.host, self.port)
                self.down.initiate_connection()
                self.up.initiate_connection()
            for data in self.pending:
                self.data_received(data)
            self.pending = []
            for event in self.up.receive_data(self.up_pending):
                self._agent_event(event)
            self._send()
            while chunk := await reader.read(CHUNK):
                for event in self.up.receive_data(chunk):
                    self._agent_event(event)
                self._send()
        except asyncio.CancelledError:
            how = {"by": "proxy" if self.proxy.stopping else "client"}
            raise
        except (OSError, H2Error) as exc:
            how = {"by": "agent", "cut": True, "reason": f"{type(exc).__name__}: {exc}"}
        finally:
            for s in list(self.streams.values()):
                self._end(s, how)
            if self.task is not None:
                self.proxy.open_streams.discard(self.task)
            self.client.close()
            if self.writer is not None:
                self.writer.close()

    def _send(self) -> None:
        for s in list(self.streams.values()):
            s.end_up = self._flush(self.up, s.up, s.to_up, s.end_up)
            ended = self._flush(self.down, s.down, s.to_down, s.end_down)
            if s.end_down and not ended:  # all of it went to the client: the exchange is over
                self._end(s, {"by": "agent"})
            s.end_down = ended
        if out := self.down.data_to_send():
            self.client.write(out)
        if self.writer is not None and (out := self.up.data_to_send()):
            self.writer.write(out)

    @staticmethod
    def _flush(conn: H2Connection, sid: int, buffer: bytearray, end: bool) -> bool:
        """Send what the stream's window takes; end it once all is sent. Whether the end is
        still to be sent."""
        try:
            while buffer:
                window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                if window <= 0:
                    return end
                conn.send_data(sid, bytes(buffer[:window]))
                del buffer[:window]
            if end:
                conn.end_stream(sid)
        except H2Error:
            buffer.clear()
        return False

    def _end(self, s: _Stream, how: dict[str, Any]) -> None:
        if s.done:
            return
        s.done = True
        self.streams.pop(s.down, None)
        self.by_up.pop(s.up, None)
        fields: dict[str, Any] = {"exchange": s.where["exchange"], **how, "bytes": s.size}
        if s.parser is not None:
            fields["keepalives"] = s.parser.keepalives
        self.proxy.writer.event(self.proxy.now(), "end", **fields)


def _text(headers: Any) -> list[tuple[str, str]]:
    """Headers as text (h2 decodes them with `header_encoding`; bytes only if told not to)."""
    return [
        (k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v)
        for k, v in headers or ()
    ]


def where_of(method: str, headers: dict[str, str], exchange: int) -> dict[str, Any]:
    channel = {"POST": "post", "DELETE": "delete"}.get(method, "other")
    if method == "GET":
        channel = "session" if headers.get("acp-session-id") else "connection"
    where: dict[str, Any] = {"transport": "h2c", "channel": channel, "exchange": exchange}
    if found := headers.get("acp-connection-id"):
        where["acp_connection"] = found
    if found := headers.get("acp-session-id"):
        where["acp_session"] = found
    return where
