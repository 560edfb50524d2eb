"""`acp-trace bridge URL`: a remote agent as a stdio agent. JSON-RPC lines read on stdin go to
the agent at URL, its messages come out on stdout one per line, so whatever speaks ACP on
stdio (an editor, `acp-trace drive`, the pytest plugin, `acp-trace record -- ...`) can talk
to an agent served over WebSocket or Streamable HTTP.

- `ws://`, `wss://`: one WebSocket; a line is a text frame, a text frame a line.
- `http://`, `https://`: the client side of Streamable HTTP as the official SDKs speak it:
  every message is POSTed (`initialize` first: its answer, in the body, names the connection,
  `Acp-Connection-Id`, sent with every later request); a message about a session carries its
  `Acp-Session-Id`. The agent's messages come on SSE streams the bridge opens with GET: the
  connection's after `initialize`, a session's once a message names that session. A POST
  answered with a body (JSON or SSE) has its messages passed on too. stdin's end DELETEs the
  connection.

At stdin's end the bridge waits for the answers to the requests it passed on (at most
GRACE seconds, as a stdio agent finishes what it was asked), then closes the WebSocket or
DELETEs the connection and exits 0; the agent closing the WebSocket or the connection stream
ends it too; 1 when the agent could not be reached, with one line on stderr.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import suppress
from typing import Any

import aiohttp

from acp_trace.jsonrpc import as_dict, loads
from acp_trace.remote.sse import EventParser

__all__ = ["bridge"]

SESSION_HEADER = "Acp-Session-Id"
CONNECTION_HEADER = "Acp-Connection-Id"
LINE_LIMIT = 1 << 31  # no line-length limit worth the name (asyncio's default is 64 KiB)
GRACE = 5.0  # seconds the answers still owed at stdin's end may take


class Owed:
    """The client's requests passed on and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.none = asyncio.Event()
        self.none.set()

    def sent(self, line: bytes) -> None:
        message = _message(line)
        if "method" in message and message.get("id") is not None:
            self.ids.add(_id(message))
            self.none.clear()

    def got(self, line: bytes) -> None:
        message = _message(line)
        if "method" not in message:
            self.ids.discard(_id(message))
            if not self.ids:
                self.none.set()

    async def settled(self) -> None:
        with suppress(TimeoutError):
            await asyncio.wait_for(self.none.wait(), GRACE)


def _message(data: bytes) -> dict[str, Any]:
    """A line as a JSON-RPC message ({} for what is none: it is passed on all the same, the
    agent answers it as it answers bad JSON)."""
    try:
        return as_dict(loads(data))
    except ValueError:
        return {}


def bridge(url: str) -> int:
    """Run until stdin ends or the agent goes; the exit code."""
    try:
        return asyncio.run(_bridge(url))
    except (aiohttp.ClientError, OSError) as exc:
        sys.stderr.write(f"acp-trace bridge: {url}: {exc or type(exc).__name__}\n")
        return 1


async def _bridge(url: str) -> int:
    stdin = asyncio.StreamReader(limit=LINE_LIMIT)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        if url.startswith(("ws://", "wss://")):
            return await _websocket(http, url, stdin)
        return await _Http(http, url).run(stdin)


def _out(line: bytes, owed: Owed) -> None:
    sys.stdout.buffer.write(line.rstrip(b"\r\n") + b"\n")
    sys.stdout.buffer.flush()
    owed.got(line)


async def _websocket(http: aiohttp.ClientSession, url: str, stdin: asyncio.StreamReader) -> int:
    owed = Owed()
    async with http.ws_connect(url, max_msg_size=0) as ws:

        async def agent() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    _out(msg.data.encode(), owed)

        reader = asyncio.ensure_future(agent())
        while line := await stdin.readline():
            if line.strip() and not reader.done():
                owed.sent(line)
                await ws.send_str(line.decode("utf-8", "replace").rstrip("\r\n"))
        await asyncio.wait(
            [reader, asyncio.ensure_future(owed.settled())], return_when=asyncio.FIRST_COMPLETED
        )
        await ws.close()
        await reader
    return 0


class _Http:
    """One ACP connection over Streamable HTTP."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http, self.url = http, url
        self.connection: str | None = None
        self.streams: dict[str | None, asyncio.Task[None]] = {}
        self.asked: dict[Any, str] = {}  # the agent's request ids -> their session
        self.gone = asyncio.Event()  # the connection stream ended
        self.owed = Owed()

    async def run(self, stdin: asyncio.StreamReader) -> int:
        while True:
            reading = asyncio.ensure_future(stdin.readline())
            await asyncio.wait(
                [reading, asyncio.ensure_future(self.gone.wait())],
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not reading.done() or not (line := reading.result()):
                reading.cancel()
                break
            if line.strip():
                self.owed.sent(line)
                await self._post(line.strip())
        gone = asyncio.ensure_future(self.gone.wait())
        await asyncio.wait(
            [gone, asyncio.ensure_future(self.owed.settled())], return_when=asyncio.FIRST_COMPLETED
        )
        if self.connection is not None and not self.gone.is_set():
            async with self.http.delete(self.url, headers={CONNECTION_HEADER: self.connection}):
                pass
        for task in self.streams.values():
            task.cancel()
        await asyncio.gather(*self.streams.values(), return_exceptions=True)
        return 0

    async def _post(self, line: bytes) -> None:
        message = _message(line)
        session = _session_of(message) or self.asked.pop(_id(message), None)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.connection is not None:
            headers[CONNECTION_HEADER] = self.connection
        if session is not None:
            headers[SESSION_HEADER] = session
        async with self.http.post(self.url, data=line, headers=headers) as response:
            found = response.headers.get(CONNECTION_HEADER)
            if found and self.connection is None:
                self.connection = found
                self._open(None)
            await self._body(response)
        if session is not None:
            self._open(session)

    async def _body(self, response: aiohttp.ClientResponse) -> None:
        if response.content_type == "text/event-stream":
            await self._events(response)
        elif response.status < 300 and (body := await response.read()).strip():
            self._seen(body)
        elif response.status >= 300:
            said = (await response.read())[:200].decode("utf-8", "replace")
            text = "".join(c if c.isprintable() else " " for c in " ".join(said.split()))
            sys.stderr.write(f"acp-trace bridge: POST answered {response.status}: {text}\n")

    async def _events(self, response: aiohttp.ClientResponse) -> None:
        parser = EventParser()
        async for chunk in response.content.iter_any():
            for event in parser.feed(chunk):
                self._seen(event.data)

    def _seen(self, data: bytes) -> None:
        """A message of the agent's: out on stdout; a session it names gets its stream."""
        message = _message(data)
        if "method" in message and "id" in message and (session := _session_of(message)):
            self.asked[_id(message)] = session
        named = as_dict(message.get("result")).get("sessionId")
        _out(data.replace(b"\r", b" ").replace(b"\n", b" "), self.owed)
        if isinstance(named, str):
            self._open(named)

    def _open(self, session: str | None) -> None:
        if session not in self.streams and self.connection is not None:
            self.streams[session] = asyncio.ensure_future(self._stream(session))

    async def _stream(self, session: str | None) -> None:
        headers = {"Accept": "text/event-stream", CONNECTION_HEADER: self.connection or ""}
        if session is not None:
            headers[SESSION_HEADER] = session
        try:
            async with self.http.get(self.url, headers=headers) as response:
                if response.status < 300:
                    await self._events(response)
        except aiohttp.ClientError:
            pass
        finally:
            if session is None:
                self.gone.set()


def _session_of(message: dict[str, Any]) -> str | None:
    session = as_dict(message.get("params")).get("sessionId")
    return session if isinstance(session, str) else None


def _id(message: dict[str, Any]) -> Any:
    value = message.get("id")
    return (type(value).__name__, value) if value is not None else None


def main() -> None:
    """`python -m acp_trace.remote.bridge URL`."""
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python -m acp_trace.remote.bridge URL\n")
        sys.exit(2)
    sys.exit(bridge(sys.argv[1]))


if __name__ == "__main__":
    main()
