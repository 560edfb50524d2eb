"""The rules only a remote transport can break, on hand-written remote recordings: each
broken by its sequence, and kept by the sequence that differs in one step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

import acp_trace

HEADER = {
    "acp_trace": 1,
    "kind": "header",
    "started_at": "2026-12-06T10:00:00.000000Z",
    "upstream": "http://127.0.0.1:9/acp",
    "listen": "127.0.0.1:8765",
    "cwd": "/w",
    "pid": 1,
    "recorder": "acp-trace 0.1.0",
}
INIT = [
    ("open", {"transport": "http", "channel": "post", "exchange": 1, "method": "POST"}),
    ("client", {"id": 0, "method": "initialize", "params": {"protocolVersion": 2}}, 1, "post"),
    ("status", {"exchange": 1, "status": 200}),
    ("agent", {"id": 0, "result": {"protocolVersion": 2}}, 1, "post"),
    ("end", {"exchange": 1, "by": "agent"}),
    (
        "open",
        {
            "transport": "http",
            "channel": "session",
            "exchange": 2,
            "method": "GET",
            "acp_session": "s1",
        },
    ),
    ("status", {"exchange": 2, "status": 200, "sse": True}),
]


def _update(session: str, kind: str, **more: Any) -> dict[str, Any]:
    update = {"sessionUpdate": kind, **more}
    return {"method": "session/update", "params": {"sessionId": session, "update": update}}


def write(tmp_path: Path, steps: list[tuple[Any, ...]]) -> Path:
    """A remote trace: ("client"|"agent", message, exchange, channel[, session]) records and
    (event, fields) tap events, stamped 1 ms apart."""
    lines = [orjson.dumps(HEADER)]
    for seq, step in enumerate(INIT + steps, start=1):
        head = {"seq": seq, "t_ns": seq * 1_000_000}
        if step[0] in ("client", "agent"):
            src, msg, exchange, channel, *session = step
            where = {"transport": "http", "channel": channel, "exchange": exchange}
            if session:
                where["acp_session"] = session[0]
            record = {**head, "src": src, **where, "msg": {"jsonrpc": "2.0", **msg}}
        else:
            record = {**head, "src": "tap", "event": step[0], **step[1]}
        lines.append(orjson.dumps(record))
    path = tmp_path / "remote.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def findings(path: Path, rule: str) -> list[dict[str, Any]]:
    table = acp_trace.analyze([path]).findings()
    return table.filter(table["rule"] == rule).to_dicts()


NEW = [
    ("client", {"id": 1, "method": "session/new", "params": {"cwd": "/w"}}, 3, "post"),
    ("agent", {"id": 1, "result": {"sessionId": "s1"}}, 4, "connection"),
]


def test_a_message_on_another_sessions_stream(tmp_path: Path) -> None:
    """An update for s2 on s1's session stream is `remote-wrong-stream`; s1's own is not."""
    steps = [*NEW, ("agent", _update("s1", "usage_update"), 2, "session", "s1")]
    assert findings(write(tmp_path, steps), "remote-wrong-stream") == []
    steps.append(("agent", _update("s2", "usage_update"), 2, "session", "s1"))
    [found] = findings(write(tmp_path, steps), "remote-wrong-stream")
    assert found["session"] == "s2" and "the session stream of s1 (exchange 2)" in found["message"]


def test_statuses_the_client_provoked(tmp_path: Path) -> None:
    """A 409 for a second reader is the client's `remote-client-error`, with the body; a 404 is
    not one of them."""
    steps = [
        (
            "open",
            {
                "transport": "http",
                "channel": "session",
                "exchange": 5,
                "method": "GET",
                "acp_session": "s1",
            },
        ),
        ("status", {"exchange": 5, "status": 409}),
        ("end", {"exchange": 5, "by": "agent", "body": '{"error":"already has a reader"}'}),
        ("open", {"transport": "http", "channel": "post", "exchange": 6, "method": "POST"}),
        ("status", {"exchange": 6, "status": 404}),
        ("end", {"exchange": 6, "by": "agent"}),
    ]
    [found] = findings(write(tmp_path, steps), "remote-client-error")
    assert found["side"] == "client" and "answered 409" in found["message"]
    assert "already has a reader" in found["message"]


PROMPT = (
    "client",
    {"id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}},
    3,
    "post",
    "s1",
)


def test_a_stream_ended_by_the_agent_while_owing(tmp_path: Path) -> None:
    """The session stream ends (the agent's side) with s1's prompt pending: an error; the
    client closing it, or the prompt answered first, is no finding."""
    ended = [*NEW, PROMPT, ("end", {"exchange": 2, "by": "agent", "cut": True, "reason": "lost"})]
    [found] = findings(write(tmp_path, ended), "remote-stream-closed-owing")
    assert "was cut by the agent's side with 1 request(s) still owed" in found["message"]
    by_client = [*NEW, PROMPT, ("end", {"exchange": 2, "by": "client"})]
    assert findings(write(tmp_path, by_client), "remote-stream-closed-owing") == []
    answered = [*NEW, PROMPT, ("agent", {"id": 2, "result": {}}, 2, "session", "s1"), ended[-1]]
    assert findings(write(tmp_path, answered), "remote-stream-closed-owing") == []


def test_a_reconnect_that_lost_what_was_owed(tmp_path: Path) -> None:
    """After the stream ended owing the prompt, the client opens it again; the answer never
    comes: a warning. When it comes on the new stream, nothing was lost."""
    again = [
        *NEW,
        PROMPT,
        ("end", {"exchange": 2, "by": "agent"}),
        (
            "open",
            {
                "transport": "http",
                "channel": "session",
                "exchange": 7,
                "method": "GET",
                "acp_session": "s1",
            },
        ),
        (
            "reconnect",
            {
                "transport": "http",
                "channel": "session",
                "exchange": 7,
                "acp_session": "s1",
                "previous": 2,
            },
        ),
    ]
    [found] = findings(write(tmp_path, again), "remote-reconnect-lost")
    assert (
        found["severity"] == "warning"
        and "1 request(s) owed there never got an answer" in found["message"]
    )
    delivered = [*again, ("agent", {"id": 2, "result": {}}, 7, "session", "s1")]
    assert findings(write(tmp_path, delivered), "remote-reconnect-lost") == []


def _resume(response_channel: str) -> list[tuple[Any, ...]]:
    resume = {
        "id": 3,
        "method": "session/resume",
        "params": {"sessionId": "s1", "cwd": "/w", "replayFrom": {"type": "start"}},
    }
    return [
        *NEW,
        ("client", resume, 8, "post", "s1"),
        ("agent", _update("s1", "user_message", messageId="u0", content=[]), 2, "session", "s1"),
        ("agent", _update("s1", "replay_complete"), 2, "session", "s1"),
        ("agent", _update("s1", "state_update", state="idle"), 2, "session", "s1"),
        (
            "agent",
            {"id": 3, "result": {}},
            2 if response_channel == "session" else 4,
            response_channel,
            *(["s1"] if response_channel == "session" else []),
        ),
    ]


def test_a_replay_over_two_streams_is_ordered_by_stamps_only(tmp_path: Path) -> None:
    """Marker on the session stream, response on the connection stream: an info finding that
    names both streams; all on the session stream (the TypeScript SDK): none."""
    [found] = findings(write(tmp_path, _resume("connection")), "remote-order-by-stamps")
    assert found["severity"] == "info"
    assert "the connection stream (exchange 4)" in found["message"]
    assert "the session stream of s1 (exchange 2)" in found["message"]
    assert findings(write(tmp_path, _resume("session")), "remote-order-by-stamps") == []


def test_a_stdio_trace_gets_no_remote_finding(tmp_path: Path) -> None:
    """The rules read only traces whose header names an upstream."""
    path = write(tmp_path, _resume("connection"))
    lines = path.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    del head["upstream"], head["listen"]
    head["command"] = ["agent"]
    path.write_bytes(b"\n".join([orjson.dumps(head), *lines[1:]]) + b"\n")
    table = acp_trace.analyze([path]).findings()
    assert not any(rule.startswith("remote-") for rule in table["rule"].to_list())


def test_a_websocket_the_agent_closed_for_the_clients_fault(tmp_path: Path) -> None:
    """The agent closing a WebSocket with 1002 is the client's `remote-client-error`; a close
    with 1000 (or one by the client) is not."""
    opened = ("open", {"transport": "ws", "channel": "ws", "exchange": 9, "method": "GET"})
    status = ("status", {"exchange": 9, "status": 101})
    refused = ("end", {"exchange": 9, "by": "agent", "code": 1002, "reason": "expected initialize"})
    [found] = findings(write(tmp_path, [opened, status, refused]), "remote-client-error")
    assert found["side"] == "client"
    assert "closed the WebSocket (exchange 9) with 1002 (expected initialize)" in found["message"]
    normal = ("end", {"exchange": 9, "by": "agent", "code": 1000})
    assert findings(write(tmp_path, [opened, status, normal]), "remote-client-error") == []
