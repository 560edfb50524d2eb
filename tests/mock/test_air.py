"""`acp-trace mock --air`: to a client that advertises JetBrains AIR's `loadReplayEnd`, the mock
ends each load's or replaying resume's replay with claude-agent-acp's end-of-replay event, as
claude-agent-acp 0.101.0 does; to a client that does not, or without the option, it plays the
recording as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_trace.jsonrpc import AIR_CLIENT_META, AIR_EVENT_META
from mocklive import updates
from tracebuilder import TraceBuilder

RESUME = {"sessionId": "s1", "cwd": "/w", "replayFrom": {"type": "start"}}
LOAD = {"sessionId": "s1", "cwd": "/w", "mcpServers": []}


def _trace(path: Path, protocol: int, *, event: bool = False, error: bool = False) -> Path:
    t = TraceBuilder(protocol=protocol, agent="recorded-agent")
    rid = t.resume("s1") if protocol == 2 else t.load("s1")
    t.history("s1", 1, message_ids=protocol == 2)
    if protocol == 2:
        t.marker("s1")
    if event:
        t.update("s1", "session_info_update", _meta=AIR_EVENT_META)
    if protocol == 2:
        t.state("s1")
    if error:
        t.error(rid, -32603)
    else:
        t.response(rid)
    return t.write(path)


def _init(conn: Any, protocol: int, air: bool) -> None:
    caps = {"_meta": AIR_CLIENT_META} if air else {}
    holder = "capabilities" if protocol == 2 else "clientCapabilities"
    conn.call("initialize", {"protocolVersion": protocol, holder: caps}, id=0)


def _replay(conn: Any, protocol: int) -> list[Any]:
    if protocol == 2:
        return list(conn.call("session/resume", RESUME, id=1))
    return list(conn.call("session/load", LOAD, id=1))


AIR = ("s1", "session_info_update")


@pytest.mark.parametrize("protocol", [1, 2])
def test_air_client_gets_the_event_at_the_end_of_the_replay(
    live: Any, tmp_path: Path, protocol: int
) -> None:
    conn = live(_trace(tmp_path / "t.jsonl", protocol), air=True)
    _init(conn, protocol, air=True)
    got = _replay(conn, protocol)
    kinds = updates(got)
    assert kinds.count(AIR) == 1
    last_replayed = "replay_complete" if protocol == 2 else "agent_message"
    assert kinds[kinds.index(AIR) - 1] == ("s1", last_replayed)
    event = next(m for m in got if m.get("method") == "session/update"
                 and m["params"]["update"]["sessionUpdate"] == "session_info_update")  # fmt: skip
    assert event["params"]["update"]["_meta"] == AIR_EVENT_META
    assert "result" in got[-1]


@pytest.mark.parametrize(
    ("option", "client", "event", "error", "expected"),
    [
        (False, True, False, False, 0),  # no --air: the recording as it is
        (True, False, False, False, 0),  # the client did not ask
        (True, True, True, False, 1),  # recorded already: not sent twice
        (True, True, False, True, 0),  # the recording answered with an error
    ],
)
def test_event_only_when_asked_and_not_twice(
    live: Any, tmp_path: Path, option: bool, client: bool, event: bool, error: bool, expected: int
) -> None:
    conn = live(_trace(tmp_path / "t.jsonl", 2, event=event, error=error), air=option)
    _init(conn, 2, air=client)
    assert updates(_replay(conn, 2)).count(AIR) == expected
