"""Server-sent events cut out of a stream's chunks as they arrive, for the record only (the
chunks themselves are forwarded as they came): the event-stream format of the WHATWG HTML
standard (lines end with CRLF, LF or CR; `:` starts a comment; `data`, `id`, `event`,
`retry` fields; a blank line dispatches).

An event with data is a message the agent sent; a block holding only comments (the SDKs'
`: keep-alive` every 15 s) is a keep-alive, counted and not recorded one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_trace.remote.writer import RemoteWriter

__all__ = ["Event", "EventParser", "record_response"]


@dataclass
class Event:
    """One dispatched event: its data (lines joined by `\\n`), `id` and `event` fields as the
    event carried them (None when absent), and its size on the wire."""

    data: bytes
    id: str | None = None
    name: str | None = None
    size: int = 0


@dataclass
class EventParser:
    """Feed chunks, take events. `keepalives` counts comment-only blocks; `pending` is what
    of an unfinished event is held (the rest of it not yet arrived)."""

    keepalives: int = 0
    _buffer: bytes = b""
    _data: list[bytes] = field(default_factory=list)
    _id: str | None = None
    _name: str | None = None
    _fields: bool = False
    _comments: bool = False
    _size: int = 0
    _cr: bool = False

    @property
    def pending(self) -> int:
        return len(self._buffer) + self._size

    def feed(self, chunk: bytes) -> list[Event]:
        """The events this chunk completes."""
        if self._cr and chunk.startswith(b"\n"):  # the LF of a CRLF split across chunks
            chunk = chunk[1:]
            self._size += 1
        self._cr = False
        data = self._buffer + chunk
        events: list[Event] = []
        start = 0
        while True:
            end, width = _line_end(data, start)
            if end < 0:
                break
            if data[end : end + 1] == b"\r" and end + 1 == len(data):
                self._cr = True  # may be CRLF: the LF comes with the next chunk
            event = self._line(data[start:end], end - start + width)
            if event is not None:
                events.append(event)
            start = end + width
        self._buffer = data[start:]
        return events

    def _line(self, line: bytes, size: int) -> Event | None:
        self._size += size
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            self._comments = True
            return None
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        self._fields = True
        if name == b"data":
            self._data.append(value)
        elif name == b"id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")
        elif name == b"event":
            self._name = value.decode("utf-8", "replace")
        return None

    def _dispatch(self) -> Event | None:
        event = None
        if self._data:
            event = Event(b"\n".join(self._data), self._id, self._name, self._size)
        elif self._comments and not self._fields:
            self.keepalives += 1
        self._data, self._id, self._name = [], None, None
        self._fields = self._comments = False
        self._size = 0
        return event


def _line_end(data: bytes, start: int) -> tuple[int, int]:
    """Where the next line ending is at or after `start`, and its width (CRLF is 2); -1 when
    the line is not finished yet."""
    lf = data.find(b"\n", start)
    cr = data.find(b"\r", start, lf if lf >= 0 else len(data))
    if cr >= 0:
        return cr, 2 if data[cr + 1 : cr + 2] == b"\n" else 1
    return (lf, 1) if lf >= 0 else (-1, 0)


def record_response(
    writer: RemoteWriter,
    t: int,
    data: bytes,
    parser: EventParser | None,
    body: bytearray,
    where: dict[str, Any],
) -> None:
    """What a piece of an agent's response carried, for the record (HTTP/1.1 and h2c alike):
    each SSE event a message as it is complete (its `id` as `sse_id`); a body that is no SSE
    kept in `body` up to the writer's record size, recorded whole at the response's end."""
    if parser is None:
        if len(body) < writer.max_record_bytes:
            body += data
        return
    for event in parser.feed(data):
        at = where if event.id is None else {**where, "sse_id": event.id}
        writer.message(t, "agent", event.data, at)
