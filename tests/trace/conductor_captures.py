"""Write the conductor captures of tests/data/imports/ byte for byte as the conductors write them.

    python tests/trace/conductor_captures.py

Each line is what `serde_json::to_writer(&TraceEvent)` and a `\n` give (trace.rs
`EventWriter::write_event`): the enum is internally tagged, so `type` comes first, then the
struct's fields in declaration order (`RequestEvent`: ts, protocol, from, to, id, method,
session (skipped when None), params; `ResponseEvent`: ts, from, to, id, is_error, payload;
`NotificationEvent`: ts, protocol, from, to, method, session, params), compact, `ts` as the
shortest float that reads back. Both conductors pass `session: None`, so it never appears.

- conductor-v10.jsons: sacp-conductor 10.0.1 without proxies (`client`, `agent`, the client's
  own ids; an error payload is `{"error": e.to_string()}`, the message without its code).
- conductor-v11.jsons: agent-client-protocol-conductor 2.0.0 without proxies: the trace-only
  proxy's ids (UUID strings), `Client` and `Agent`, full JSON-RPC error objects.
- conductor-v11-proxy.jsons: the same crate with one proxy, as its trace_snapshot.rs test
  shows it: `Client` -> `Proxy(0)` carries `_proxy/initialize`, the agent is `Proxy(1)`, and
  neither messages to the client nor messages to the agent are traced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "data" / "imports"


def _dump(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def request(ts: float, frm: str, to: str, rid: Any, method: str, params: Any) -> str:
    return _dump({"type": "request", "ts": ts, "protocol": "acp", "from": frm, "to": to,
                  "id": rid, "method": method, "params": params})  # fmt: skip


def notification(ts: float, frm: str, to: str, method: str, params: Any) -> str:
    return _dump({"type": "notification", "ts": ts, "protocol": "acp", "from": frm, "to": to,
                  "method": method, "params": params})  # fmt: skip


def response(ts: float, frm: str, to: str, rid: Any, payload: Any, error: bool = False) -> str:
    return _dump({"type": "response", "ts": ts, "from": frm, "to": to, "id": rid,
                  "is_error": error, "payload": payload})  # fmt: skip


def chunk(session: str, kind: str, text: str) -> dict[str, Any]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    return {"sessionId": session, "update": update}


INIT_V1 = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False,
           "writeTextFile": False}, "terminal": False}}  # fmt: skip
INIT_V2 = {"protocolVersion": 2, "info": {"name": "zed", "version": "0.212.0"}, "capabilities": {}}
AGENT_V2 = {"protocolVersion": 2, "info": {"name": "elizacp", "version": "11.0.0"},
            "capabilities": {"session": {"resume": {"replay": {}}}}}  # fmt: skip
HISTORY = {"sessionId": "sess_4f1", "update": {"sessionUpdate": "user_message", "messageId": "m0",
           "content": [{"type": "text", "text": "hi"}]}}  # fmt: skip
RESUME = {"sessionId": "sess_4f1", "cwd": "/work", "replayFrom": {"type": "_zed/checkpoint",
          "id": "c9"}}  # fmt: skip


def v10() -> list[str]:
    """A v2 resume with a vendor cursor rejected with -32602 (kept as text only), then a load."""
    c, a = "client", "agent"
    return [
        request(0.0123, c, a, 0, "initialize", INIT_V2),
        response(0.4311, a, c, 0, AGENT_V2),
        request(0.4402, c, a, 1, "session/resume", RESUME),
        response(
            0.4513,
            a,
            c,
            1,
            {"error": 'Invalid params: "unsupported replayFrom cursor"'},
            error=True,
        ),
        request(0.5, c, a, 2, "session/resume", {**RESUME, "replayFrom": {"type": "start"}}),
        notification(0.5041, a, c, "session/update", HISTORY),
        notification(
            0.5043,
            a,
            c,
            "session/update",
            {"sessionId": "sess_4f1", "update": {"sessionUpdate": "replay_complete"}},
        ),
        notification(
            0.5052,
            a,
            c,
            "session/update",
            {"sessionId": "sess_4f1", "update": {"sessionUpdate": "state_update", "state": "idle"}},
        ),
        response(0.5061, a, c, 2, {}),
        request(
            0.61,
            c,
            a,
            3,
            "session/load",
            {"sessionId": "sess_gone", "cwd": "/work", "mcpServers": []},
        ),
        response(
            0.6132, a, c, 3, {"error": 'Resource not found: {\n  "uri": "sess_gone"\n}'}, error=True
        ),
    ]


UUIDS = [
    "3b9f6c2e-8d41-4e0a-9f7b-1c2d3e4f5a60",
    "a7e21f03-5b6c-4d8e-8f90-0a1b2c3d4e5f",
    "0c4d8e12-96ab-4cde-b012-3456789abcde",
    "f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0f9",
]


def v11() -> list[str]:
    """The same exchanges as v10 through the trace-only proxy: UUID ids, full error objects."""
    c, a = "Client", "Agent"
    i0, i1, i2, i3 = UUIDS
    return [
        request(0.0123, c, a, i0, "initialize", INIT_V2),
        response(0.4311, a, c, i0, AGENT_V2),
        request(0.4402, c, a, i1, "session/resume", RESUME),
        response(
            0.4513,
            a,
            c,
            i1,
            {"code": -32602, "message": "Invalid params", "data": "unsupported replayFrom cursor"},
            error=True,
        ),
        request(0.5, c, a, i2, "session/resume", {**RESUME, "replayFrom": {"type": "start"}}),
        notification(0.5041, a, c, "session/update", HISTORY),
        notification(
            0.5043,
            a,
            c,
            "session/update",
            {"sessionId": "sess_4f1", "update": {"sessionUpdate": "replay_complete"}},
        ),
        notification(
            0.5052,
            a,
            c,
            "session/update",
            {"sessionId": "sess_4f1", "update": {"sessionUpdate": "state_update", "state": "idle"}},
        ),
        response(0.5061, a, c, i2, {}),
        request(
            0.61,
            a,
            c,
            i3,
            "session/request_permission",
            {"sessionId": "sess_4f1", "toolCall": {"toolCallId": "t1"}, "options": []},
        ),
        response(0.7, c, a, i3, {"outcome": {"outcome": "cancelled"}}),
    ]


def v11_proxy() -> list[str]:
    """One proxy, in the order and shape of trace_snapshot.rs (testy behind arrow_proxy)."""
    c, p0, agent = "Client", "Proxy(0)", "Proxy(1)"
    i0, i1, i2, _ = UUIDS
    init_result = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
    prompt = {"sessionId": "sess_9", "prompt": [{"type": "text", "text": '{"command":"greet"}'}]}
    return [
        request(0.0021, c, p0, i0, "_proxy/initialize", INIT_V1),
        response(0.2504, p0, c, i0, init_result),
        request(0.2513, c, p0, i1, "session/new", {"cwd": ".", "mcpServers": []}),
        response(0.2617, p0, c, i1, {"sessionId": "sess_9"}),
        request(0.2625, c, p0, i2, "session/prompt", prompt),
        notification(
            0.2711,
            agent,
            p0,
            "session/update",
            chunk("sess_9", "agent_message_chunk", "Hello, world!"),
        ),
        response(0.2734, p0, c, i2, {"stopReason": "end_turn"}),
    ]


def captures() -> dict[str, list[str]]:
    """Each capture file's name and its lines."""
    return {
        "conductor-v10.jsons": v10(),
        "conductor-v11.jsons": v11(),
        "conductor-v11-proxy.jsons": v11_proxy(),
    }


def main() -> None:
    for name, lines in captures().items():
        (HERE / name).write_text("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
