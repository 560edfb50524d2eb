"""An HTTP/1.1 request asking to go on in HTTP/2 (`Upgrade: h2c`, RFC 7540 3.2, as Java's
HttpClient sends to an http:// URL) through the recorder: the upstream is asked the same; one
that switches gets the client switched too (101, then HTTP/2 both ways, recorded as h2c), one
that does not has its HTTP/1.1 answer passed on byte for byte and the connection stays
HTTP/1.1."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, ResponseReceived, StreamEnded
from remotelib import SSE_CHUNKS, h2_upstream, recorder, upstream

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'
TIMEOUT = 60


def _upgrade_request(address: str, settings: str, body: bytes = INIT) -> bytes:
    head = (
        f"POST /acp HTTP/1.1\r\nHost: {address}\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        f"Upgrade: h2c\r\nHTTP2-Settings: {settings}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_head(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The response head (through its blank line) and what came after it in the same reads."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
        assert chunk, f"closed before a response head: {data!r}"
        data += chunk
    end = data.index(b"\r\n\r\n") + 4
    return data[:end], data[end:]


async def _switched(address: str) -> dict[str, Any]:
    """The upgrade POST (answered on stream 1), then a session stream GET on stream 3."""
    host, port = address.rsplit(":", 1)
    conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    settings = (conn.initiate_upgrade_connection() or b"").decode()
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(_upgrade_request(address, settings))
    head, rest = await _read_head(reader)
    got: dict[str, Any] = {"head": head, 1: b"", 3: b"", "ended": set()}
    events = conn.receive_data(rest)
    conn.send_headers(
        3,
        [(":method", "GET"), (":scheme", "http"), (":authority", address), (":path", "/acp"),
         ("accept", "text/event-stream"), ("acp-connection-id", "h1"), ("acp-session-id", "s1")],
        end_stream=True,
    )  # fmt: skip
    writer.write(conn.data_to_send())
    while got["ended"] != {1, 3}:
        for event in events:
            if isinstance(event, ResponseReceived):
                got[f"headers{event.stream_id}"] = dict(event.headers)
            elif isinstance(event, DataReceived):
                got[event.stream_id] += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                got["ended"].add(event.stream_id)
        writer.write(conn.data_to_send())
        if got["ended"] != {1, 3}:
            chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
            assert chunk, f"closed before both answers: {got}"
            events = conn.receive_data(chunk)
    writer.close()
    return got


def test_an_upgrade_the_upstream_takes_goes_on_in_http2_both_ways(tmp_path: Path) -> None:
    """The upstream gets the upgrade request (its Host, the proxy's own HTTP2-Settings, the
    body), the client its 101 and then HTTP/2: the upgraded POST's answer on stream 1, a later
    stream's SSE as sent; all recorded as h2c, the upgraded request's `open` of version 1.1."""
    with (
        h2_upstream(upgrade=True) as up,
        recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec,
    ):
        got = asyncio.run(_switched(rec.address))
        assert rec.stop()[0] == 0
        records = rec.records()
    assert got["head"].startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    assert got[1] == up.sent["h2-post-1"] and got["headers1"][":status"] == "200"
    assert got[3] == up.sent["h2-sse"] == b"".join(SSE_CHUNKS)
    [seen] = up.seen
    assert seen["line"] == "POST /acp HTTP/1.1" and seen["body"] == INIT
    assert seen["headers"]["Host"] == f"127.0.0.1:{up.port}"
    assert seen["headers"]["Upgrade"] == "h2c" and seen["headers"]["HTTP2-Settings"]
    opens = [r for r in records if r.get("event") == "open"]
    assert [(o["transport"], o["version"], o["method"]) for o in opens] == [
        ("h2c", "1.1", "POST"),
        ("h2c", "2", "GET"),
    ]
    assert ["Upgrade", "h2c"] in opens[0]["headers"]
    messages = [r for r in records if "msg" in r]
    assert [(r["src"], r["transport"], r["channel"], r["exchange"]) for r in messages[:3]] == [
        ("client", "h2c", "post", 1),
        ("agent", "h2c", "post", 1),
        ("agent", "h2c", "session", 2),
    ]
    assert messages[0]["msg"]["method"] == "initialize" and messages[1]["acp_connection"] == "h1"
    assert [r["status"] for r in records if r.get("event") == "status"] == [200, 200]
    ends = [r for r in records if r.get("event") == "end"]
    assert [(e["exchange"], e["by"], e.get("keepalives")) for e in ends] == [
        (1, "agent", None),
        (2, "agent", 2),
    ]


async def _exchange(address: str, request: bytes, then: bytes = b"") -> tuple[bytes, bytes]:
    """`request` on a new connection, its answer read until the upstream's Content-Length
    body is in; then `then` on the same connection, its answer."""
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    answers = []
    for sent in (request, then) if then else (request,):
        writer.write(sent)
        head, body = await _read_head(reader)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += await asyncio.wait_for(reader.read(65536), TIMEOUT)
        answers.append(head + body)
    writer.close()
    return answers[0], answers[1] if then else b""


def _without_date(answer: bytes) -> bytes:
    return b"\r\n".join(x for x in answer.split(b"\r\n") if not x.startswith(b"Date: "))


def test_an_upgrade_the_upstream_ignores_stays_http1(tmp_path: Path) -> None:
    """aiohttp answers the upgrade request in HTTP/1.1: the client gets that answer as the
    upstream sends it (as it would directly, but for the date), recorded as an HTTP/1.1
    exchange; the connection goes on in HTTP/1.1 (its next request answered through it)."""
    wrong = b'{"jsonrpc":"2.0","id":1}'
    later = (
        b"POST /acp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Acp-Session-Id: wrong\r\nContent-Length: %d\r\n\r\n%s" % (len(wrong), wrong)
    )
    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        request = _upgrade_request(rec.address, "AAMAAABkAAQAoAAAAAIAAAAA")
        direct, _ = asyncio.run(_exchange(f"127.0.0.1:{up.port}", request))
        through, second = asyncio.run(_exchange(rec.address, request, later))
        assert rec.stop()[0] == 0
        records = rec.records()
    assert direct.startswith(b"HTTP/1.1 200 OK\r\n")
    assert _without_date(through) == _without_date(direct)
    assert through.endswith(up.sent["initialize"])
    assert second.startswith(b"HTTP/1.1 400 ")
    assert [s["headers"].get("Upgrade") for s in up.seen] == ["h2c", "h2c", None]
    opens = [r for r in records if r.get("event") == "open"]
    assert [(o["transport"], o["version"], o["exchange"]) for o in opens] == [
        ("http", "1.1", 1),
        ("http", "1.1", 2),
    ]
    messages = [r for r in records if "msg" in r]
    assert [(r["src"], r["transport"], r["channel"], r["exchange"]) for r in messages] == [
        ("client", "http", "post", 1),
        ("agent", "http", "post", 1),
        ("client", "http", "post", 2),
    ]
    assert messages[1]["acp_connection"] == "c1"
    assert [r["status"] for r in records if r.get("event") == "status"] == [200, 400]
    ends = [r for r in records if r.get("event") == "end"]
    assert [(e["exchange"], e["by"]) for e in ends] == [(1, "agent"), (2, "agent")]


def test_an_upgrade_unanswered_when_the_recorder_stops_is_recorded(tmp_path: Path) -> None:
    """An upstream that has the upgrade request and has not answered when the recorder stops:
    the request is in the trace (its `open`, its body's message) and its `end` says the proxy
    ended it."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    have = threading.Event()
    accepted: list[socket.socket] = []

    def silent() -> None:
        conn, _ = listener.accept()
        accepted.append(conn)
        data = b""
        while not data.endswith(INIT) and (chunk := conn.recv(65536)):
            data += chunk
        have.set()

    thread = threading.Thread(target=silent, daemon=True)
    thread.start()
    with recorder(f"http://127.0.0.1:{port}/acp", tmp_path / "t.jsonl") as rec:
        host, client_port = rec.address.rsplit(":", 1)
        client = socket.create_connection((host, int(client_port)), timeout=TIMEOUT)
        client.sendall(_upgrade_request(rec.address, "AAMAAABkAAQAoAAAAAIAAAAA"))
        assert have.wait(TIMEOUT)
        assert rec.stop()[0] == 0
        records = rec.records()
    client.close()
    for s in (*accepted, listener):
        s.close()
    thread.join(TIMEOUT)
    [opened] = [r for r in records if r.get("event") == "open"]
    assert (opened["transport"], opened["method"], opened["exchange"]) == ("http", "POST", 1)
    assert [r["msg"]["method"] for r in records if "msg" in r] == ["initialize"]
    [end] = [r for r in records if r.get("event") == "end"]
    assert (end["exchange"], end["by"]) == (1, "proxy")
