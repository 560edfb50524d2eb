"""The remote recorder end to end against a small upstream: bytes passed on unchanged, each
message recorded with where it travelled, statuses, keep-alives, reconnects and WebSocket
closes as events, headers redacted, and a stop signal that leaves a complete trace."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import time
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest
from remotelib import SSE_CHUNKS, Recorder, h2_upstream, recorder, upstream

SCHEMA = json.loads(
    resources.files("acp_trace.trace").joinpath("trace-format.schema.json").read_text()
)
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'


async def _http_session(base: str) -> dict[str, Any]:
    """initialize, a POST with a credential, two SSE GETs (the second a reconnect), a 400 and
    a 409; what the client got."""
    got: dict[str, Any] = {}
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-secret-1"}
        async with http.post(f"{base}/acp?token=abc123", data=INIT, headers=headers) as r:
            got["initialize"] = (r.status, await r.read(), r.headers.get("Acp-Connection-Id"))
        stream = {"Accept": "text/event-stream", "Acp-Connection-Id": "c1", "Acp-Session-Id": "s1"}
        for n in range(2):
            async with http.get(f"{base}/acp", headers=stream) as r:
                got[f"sse{n}"] = b"".join([chunk async for chunk in r.content.iter_any()])
        wrong = {"Content-Type": "application/json", "Acp-Session-Id": "wrong"}
        async with http.post(f"{base}/acp", data=b'{"jsonrpc":"2.0","id":1}', headers=wrong) as r:
            got["400"] = r.status
        async with http.get(f"{base}/acp", headers={**stream, "Acp-Session-Id": "taken"}) as r:
            got["409"] = r.status
    return got


@pytest.fixture
def http_run(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], int, str, Any]:
    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        got = asyncio.run(_http_session(f"http://{rec.address}"))
        code, err = rec.stop(signal.SIGINT)
        return got, rec.records(), code, err, up


def test_http_bytes_pass_unchanged_and_every_message_is_recorded(http_run: Any) -> None:
    """The client gets the upstream's bytes exactly (the SSE stream as sent, an event cut across
    writes, CRLF lines, keep-alives); each JSON-RPC message is a record with its direction, the
    transport and the stream it came on; the SSE ids are kept."""
    got, records, code, _err, up = http_run
    assert code == 0
    assert got["initialize"] == (200, up.sent["initialize"], "c1")
    assert got["sse0"] == got["sse1"] == b"".join(SSE_CHUNKS) == up.sent["sse"]
    msgs = [r for r in records if "msg" in r]
    assert [(r["src"], r["channel"]) for r in msgs[:3]] == [
        ("client", "post"),
        ("agent", "post"),
        ("agent", "session"),
    ]
    assert msgs[1]["msg"] == json.loads(up.sent["initialize"])
    assert msgs[1]["acp_connection"] == "c1"
    session = [r for r in msgs if r.get("channel") == "session"]
    assert [r["sse_id"] for r in session] == ["1", "2", "1", "2"]
    assert session[1]["msg"] == {"jsonrpc": "2.0", "id": 5, "result": {}}  # two data lines
    assert all(r["transport"] == "http" and r["acp_session"] == "s1" for r in session)


def test_http_events_statuses_keepalives_reconnects(http_run: Any) -> None:
    """Statuses (200, 202, 400, 409) are `status` events; an SSE stream's end counts its
    keep-alives; the second GET of the same stream is a `reconnect`."""
    _got, records, _code, _err, _up = http_run
    events = [r for r in records[1:] if r["src"] == "tap"]
    statuses = [e["status"] for e in events if e["event"] == "status"]
    assert statuses == [200, 200, 200, 400, 409]
    ends = [e for e in events if e["event"] == "end" and "keepalives" in e]
    assert [e["keepalives"] for e in ends] == [2, 2]
    assert [e["by"] for e in ends] == ["agent", "agent"]
    reconnects = [e for e in events if e["event"] == "reconnect"]
    assert len(reconnects) == 1  # the second s1 GET (the `taken` one is another stream)
    assert reconnects[0]["acp_session"] == "s1" and reconnects[0]["previous"] == 2
    refused = [e for e in events if e["event"] == "end" and e.get("body")]
    assert [json.loads(e["body"])["error"] for e in refused] == [
        "Missing session id header",
        "stream already has a reader",
    ]


def test_headers_and_query_tokens_are_redacted_in_the_record_only(http_run: Any) -> None:
    """The upstream gets the Authorization header and the query token as sent; the trace has
    the scheme and the parameter's name, never the values."""
    _got, records, _code, _err, up = http_run
    assert up.seen[0]["headers"]["Authorization"] == "Bearer sk-secret-1"
    assert up.seen[0]["path"] == "/acp?token=abc123"
    text = json.dumps(records)
    assert "sk-secret-1" not in text and "abc123" not in text
    first = records[1]
    assert first["event"] == "open" and first["target"] == "/acp?token=<redacted>"
    assert ["Authorization", "Bearer <redacted>"] in first["headers"]


def test_a_stopped_recording_is_complete_and_valid(http_run: Any) -> None:
    """SIGINT ends it with `exit` then a balanced `account`; every line is valid format v1."""
    _got, records, _code, err, _up = http_run
    assert records[0]["kind"] == "header" and records[0]["listen"].startswith("127.0.0.1:")
    assert [r.get("event") for r in records[-2:]] == ["exit", "account"]
    assert records[-2]["stopped_by"] == signal.SIGINT
    for counts in records[-1]["streams"].values():
        assert counts["lines"] == counts["recorded"] > 0
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for line in records:
        validator.validate(line)
    assert [r["seq"] for r in records[1:]] == list(range(1, len(records)))
    assert "trace:" in err


async def _websocket(base: str) -> dict[str, Any]:
    got: dict[str, Any] = {}
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"{base}/acp") as ws:
            got["id"] = ws._response.headers.get("Acp-Connection-Id")
            frame = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'
            await ws.send_str(frame)
            got["echo"] = (await ws.receive()).data
            await ws.send_str("close-1008")
            closing = await ws.receive()
            got["close"] = (closing.type, ws.close_code)
        try:
            await http.ws_connect(f"{base}/plain-ws")
        except aiohttp.WSServerHandshakeError as exc:
            got["refused"] = exc.status
    return got


def test_websocket_frames_and_close_codes(tmp_path: Path) -> None:
    """Text frames pass byte for byte and are recorded both ways on the `ws` channel; the
    agent's close code 1008 reaches the client and is an `end` event; a refused upgrade keeps
    its status (426) for the client and the trace."""
    with upstream() as up, recorder(f"ws://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        got = asyncio.run(_websocket(f"http://{rec.address}"))
        code, _err = rec.stop()
        records = rec.records()
    assert code == 0
    assert got["id"].startswith("w")
    assert got["echo"] == '{"jsonrpc":"2.0","id":0,"result":{"echo":true}}'
    assert got["close"] == (aiohttp.WSMsgType.CLOSE, 1008)
    assert got["refused"] == 426
    msgs = [r for r in records if "msg" in r]
    assert [(r["src"], r["transport"], r["channel"]) for r in msgs] == [
        ("client", "ws", "ws"),
        ("agent", "ws", "ws"),
    ]
    texts = [r["src"] for r in records if r.get("text") == "close-1008"]
    assert texts == ["client"]  # not JSON: recorded as text
    ends = [r for r in records if r.get("event") == "end"]
    assert (ends[0]["by"], ends[0]["code"], ends[0]["reason"]) == ("agent", 1008, "limit")
    statuses = [r["status"] for r in records if r.get("event") == "status"]
    assert statuses == [101, 426]


def test_open_streams_end_when_the_recorder_stops(tmp_path: Path) -> None:
    """An SSE stream still open at SIGTERM is closed by the proxy (`end` by `proxy`) and the
    trace still ends with `exit` and `account`."""

    async def hold(base: str, rec: Recorder) -> int:
        async with aiohttp.ClientSession() as http:
            headers = {"Accept": "text/event-stream", "Acp-Session-Id": "s1"}
            async with http.get(f"{base}/acp?hold=1", headers=headers) as r:
                got = b""
                while len(got) < len(b"".join(SSE_CHUNKS)):
                    got += await r.content.readany()
                rec.process.send_signal(signal.SIGTERM)
                with pytest.raises(aiohttp.ClientPayloadError):
                    await r.content.read()
                return r.status

    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        assert asyncio.run(hold(f"http://{rec.address}", rec)) == 200
        assert rec.process.wait(60) == 0
        records = rec.records()
    ends = [r for r in records if r.get("event") == "end"]
    assert [(e["by"], e["reason"]) for e in ends] == [("proxy", "the recorder stopped")]
    assert [r.get("event") for r in records[-2:]] == ["exit", "account"]


def test_a_killed_recorder_leaves_a_readable_trace(tmp_path: Path) -> None:
    """SIGKILL of the recorder: its writer process still writes what it was handed, ends the
    trace with an `error` (cause `recorder`), and lets the port go."""
    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        got = asyncio.run(_http_session(f"http://{rec.address}"))
        assert got["initialize"][0] == 200
        rec.process.send_signal(signal.SIGKILL)
        rec.process.wait(60)
        host, port = rec.address.rsplit(":", 1)
        with socket.create_server((host, int(port))):  # the port is free again
            pass
    deadline = time.monotonic() + 60  # the orphaned writer process ends on its own time
    while b'"cause":"recorder"' not in rec.trace.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    records = rec.records()
    assert records[-1]["event"] == "error" and records[-1]["cause"] == "recorder"
    assert sum(1 for r in records if "msg" in r) >= 2


async def _secret_session(base: str) -> None:
    async with aiohttp.ClientSession() as http:
        headers = {"Content-Type": "application/json", "Acp-Connection-Id": "c1"}
        await (await http.post(f"{base}/acp", data=INIT, headers=headers)).read()
        new = (
            b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":'
            b'[{"name":"gh","command":"gh-mcp","args":[],"env":[{"name":"GITHUB_TOKEN","value":"s3cr3t-v4lue"}]}]}}'
        )
        await (await http.post(f"{base}/acp", data=new, headers=headers)).read()


def test_messages_are_redacted_by_the_shared_policy(tmp_path: Path) -> None:
    """A POSTed session/new with an MCP server's env secret reaches the agent as sent and is
    recorded with the value replaced and its path listed, as the stdio tap records it."""
    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        asyncio.run(_secret_session(f"http://{rec.address}"))
        rec.stop()
        records = rec.records()
    assert b"s3cr3t-v4lue" in up.seen[-1]["body"]
    [new] = [r for r in records if r.get("msg", {}).get("method") == "session/new"]
    assert new["redacted"] == ["$.params.mcpServers[0].env[0].value"]
    assert new["msg"]["params"]["mcpServers"][0]["env"][0]["value"] == "<redacted>"
    assert new["channel"] == "post" and new["acp_connection"] == "c1"
    assert "s3cr3t-v4lue" not in rec.trace.read_text()


async def _two_sockets(base: str) -> None:
    async with aiohttp.ClientSession() as http:
        for n in range(2):
            async with http.ws_connect(f"{base}/acp") as ws:
                await ws.send_str(INIT.decode().replace('"id":0', f'"id":{n}'))
                await ws.receive()


def test_each_acp_connection_gets_a_trace_of_its_own(tmp_path: Path) -> None:
    """Two WebSockets through one recording: the first in `-o t.jsonl`, the second in
    t-2.jsonl, each a whole trace (its header, its own exit and balanced account), so ids of
    one connection are never paired with another's."""
    with upstream() as up, recorder(f"ws://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        asyncio.run(_two_sockets(f"http://{rec.address}"))
        code, err = rec.stop()
    assert code == 0 and "traces, one per ACP connection" in err, err
    for name, request_id in (("t.jsonl", 0), ("t-2.jsonl", 1)):
        lines = [json.loads(x) for x in (tmp_path / name).read_text().splitlines()]
        assert lines[0]["kind"] == "header"
        ids = {r["msg"]["id"] for r in lines if "msg" in r}
        assert ids == {request_id}
        assert len({r["acp_connection"] for r in lines if "msg" in r}) == 1
        assert [r.get("event") for r in lines[-2:]] == ["exit", "account"]
        for counts in lines[-1]["streams"].values():
            assert counts["lines"] == counts["recorded"] == 1


def test_a_compressed_stream_passes_as_sent_and_is_recorded_decoded(tmp_path: Path) -> None:
    """An SSE stream sent with `Content-Encoding: gzip` reaches the client byte for byte
    (still compressed); the record holds its events' messages, decompressed."""

    async def get(base: str) -> bytes:
        async with aiohttp.ClientSession(auto_decompress=False) as http:
            headers = {"Accept": "text/event-stream", "Acp-Session-Id": "s1"}
            async with http.get(f"{base}/acp?gzip=1", headers=headers) as r:
                return await r.read()

    with upstream() as up, recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec:
        got = asyncio.run(get(f"http://{rec.address}"))
        rec.stop()
        records = rec.records()
    assert got == up.sent["sse"] != b"".join(SSE_CHUNKS)
    messages = [r["msg"] for r in records if "msg" in r]
    assert messages[1] == {"jsonrpc": "2.0", "id": 5, "result": {}}
    [end] = [r for r in records if r.get("event") == "end"]
    assert end["keepalives"] == 2 and "undecoded" not in end


def test_h2c_is_spoken_on_both_sides_and_recorded(tmp_path: Path) -> None:
    """A client that speaks HTTP/2 with prior knowledge (h2c) to the agent still does through
    the proxy: its POST is answered in its body, the SSE stream arrives as sent, and both are
    recorded as over HTTP/1.1, with `transport: "h2c"`."""
    import httpx2

    async def talk(base: str) -> tuple[bytes, bytes, str]:
        async with httpx2.AsyncClient(http1=False, http2=True) as http:
            post = await http.post(
                f"{base}/acp", content=INIT, headers={"Content-Type": "application/json"}
            )
            headers = {
                "Accept": "text/event-stream",
                "Acp-Connection-Id": "h1",
                "Acp-Session-Id": "s1",
            }
            async with http.stream("GET", f"{base}/acp", headers=headers) as r:
                sse = b"".join([chunk async for chunk in r.aiter_raw()])
            return post.content, sse, post.http_version

    with (
        h2_upstream() as up,
        recorder(f"http://127.0.0.1:{up.port}/acp", tmp_path / "t.jsonl") as rec,
    ):
        body, sse, version = asyncio.run(talk(f"http://{rec.address}"))
        assert rec.stop()[0] == 0
        records = rec.records()
    assert version == "HTTP/2"
    assert body == up.sent["h2-post-1"] and sse == up.sent["h2-sse"] == b"".join(SSE_CHUNKS)
    messages = [r for r in records if "msg" in r]
    assert [(r["src"], r["transport"], r["channel"]) for r in messages[:3]] == [
        ("client", "h2c", "post"),
        ("agent", "h2c", "post"),
        ("agent", "h2c", "session"),
    ]
    assert messages[1]["acp_connection"] == "h1"
    assert [r["status"] for r in records if r.get("event") == "status"] == [200, 200]
    ends = [r for r in records if r.get("event") == "end"]
    assert [e.get("keepalives") for e in ends] == [None, 2]


def test_dir_gets_a_private_trace_per_connection_named_after_the_upstream(tmp_path: Path) -> None:
    """--dir DIR: each connection's trace is a new file named after the start time and the
    upstream's host, mode 0600."""
    folder = tmp_path / "traces"
    folder.mkdir()
    with upstream() as up, recorder(f"ws://127.0.0.1:{up.port}/acp", folder) as rec:
        asyncio.run(_two_sockets(f"http://{rec.address}"))
        assert rec.stop()[0] == 0
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 2
    assert all(
        re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-remote-127\.0\.0\.1(-\d)?\.jsonl", n) for n in names
    ), names
    assert {(folder / n).stat().st_mode & 0o777 for n in names} == {0o600}
