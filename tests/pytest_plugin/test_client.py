"""The acp_agent fixture and its client, against demo-agent behind the tap (this suite runs
with the plugin installed, so the fixture is the one agent authors get)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_trace.jsonrpc import loads_exact
from acp_trace.pytest_plugin.agent import AgentUnderTest
from acp_trace.pytest_plugin.client import AcpError, AcpTimeout
from drivelib import BIG, BIG_ID_AGENT, demo_agent

Start = Callable[..., AgentUnderTest]
SILENT = [sys.executable, "-c", "import sys\nfor line in sys.stdin: pass"]


def test_a_v2_session_through_the_tap(acp_agent: Start) -> None:
    """initialize, session/new, a prompt that waits for its turn's end, a replaying resume:
    the updates are collected per session and the trace holds the whole exchange."""
    agent = acp_agent(demo_agent("--turns", "3"))
    client = agent.client
    assert client.initialize(protocol=2)["protocolVersion"] == 2
    sid = client.new_session(cwd="/tmp/project")
    client.prompt(sid, "hello")
    before = len(client.updates(sid))
    client.resume(sid, cwd="/tmp/project")
    replayed = [u["sessionUpdate"] for u in client.updates(sid)[before:]]
    assert "replay_complete" in replayed and replayed[-1] == "state_update"
    assert agent.close() == 0
    lines = agent.trace.read_bytes().splitlines()
    assert orjson.loads(lines[0])["kind"] == "header"
    methods = [orjson.loads(x).get("msg", {}).get("method") for x in lines[1:]]
    assert "session/resume" in methods
    assert agent.expect.replay(sid, outcome="complete")["history_updates"] > 0


def test_a_timeout_names_what_it_waited_for(acp_agent: Start) -> None:
    """An agent that never answers: the timeout says which request, its id and how long."""
    agent = acp_agent(SILENT, timeout=0.5)
    with pytest.raises(AcpTimeout, match=r"no answer to initialize \(id 0\) within 0\.5 s"):
        agent.client.initialize()


def test_an_update_wait_names_the_session_and_kind(acp_agent: Start) -> None:
    """Waiting for an update that never comes names the kind and the session."""
    agent = acp_agent(demo_agent())
    agent.client.initialize(protocol=2)
    with pytest.raises(AcpTimeout, match="no replay_complete update on session nope within"):
        agent.client.wait_for_update("nope", "replay_complete", timeout=0.2)


def test_agent_requests_go_to_the_callbacks(acp_agent: Start) -> None:
    """A permission request in the replay is answered by the test's callback; without one the
    agent gets -32601 and the client lists the request."""
    asked: list[dict[str, Any]] = []

    def allow(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": params["options"][0]["optionId"]}}

    for callback in (allow, None):
        agent = acp_agent(demo_agent("--session", "s1", "--fault", "request-before-marker"))
        if callback is not None:
            agent.client.on_request("session/request_permission", callback)
        agent.client.initialize(protocol=2)
        agent.client.resume("s1", cwd="/tmp/project")
        if callback is None:
            assert [m["method"] for m in agent.client.unhandled] == ["session/request_permission"]
    assert len(asked) == 1 and asked[0]["sessionId"] == "s1"


def test_an_error_answer_raises_with_its_code(acp_agent: Start) -> None:
    """A load of a session the agent does not have raises AcpError -32002, naming the method."""
    agent = acp_agent(demo_agent())
    agent.client.initialize(protocol=1)
    with pytest.raises(AcpError, match="session/load answered error -32002") as raised:
        agent.client.load("nope", cwd="/tmp/project")
    assert raised.value.code == -32002
    assert agent.expect.replay("nope", outcome="v1_failed")["history_updates"] == 0


def test_a_command_string_is_refused(acp_agent: Start, tmp_path: Path) -> None:
    """The command is an argv list: a string (a shell line) is a TypeError saying so."""
    with pytest.raises(TypeError, match="expected the agent's argv as a list"):
        acp_agent("my-agent --acp")


def test_an_agent_that_cannot_start_says_why(acp_agent: Start) -> None:
    """A command that does not exist: the first request fails naming it, with the tap's own
    message from stderr."""
    agent = acp_agent(["/nonexistent/agent"])
    with pytest.raises(ConnectionError) as failed:
        agent.client.initialize()
    text = str(failed.value)
    assert "closed the connection before answering initialize" in text
    assert "cannot start /nonexistent/agent: No such file or directory" in text


def test_waits_that_never_end_are_refused(acp_agent: Start, tmp_path: Path) -> None:
    """timeout=inf (which died with an OverflowError at the end of a v2 turn), nan, 0 or
    past a day, and grace=inf or negative: a ValueError naming the value before the agent
    starts; a call's own timeout the same, before anything is sent."""
    started = tmp_path / "started"
    touch = [sys.executable, "-c", f"open({str(started)!r}, 'w')"]
    bad = [("timeout", float("inf")), ("timeout", float("nan")), ("timeout", 0),
           ("timeout", 1e9), ("grace", float("inf")), ("grace", -1.0)]  # fmt: skip
    for name, value in bad:
        said = re.escape(f"acp_agent({name}=...) {value:g}: expected seconds")
        with pytest.raises(ValueError, match=said):
            acp_agent(touch, **{name: value})
    assert not started.exists()
    agent = acp_agent(demo_agent("--turns", "2"))
    agent.client.initialize(protocol=2)
    sid = agent.client.new_session(cwd="/tmp/project")
    with pytest.raises(ValueError, match=r"session/prompt timeout inf: expected seconds"):
        agent.client.prompt(sid, "hello", timeout=float("inf"))
    with pytest.raises(ValueError, match=r"wait_for_update timeout inf: expected seconds"):
        agent.client.wait_for_update(sid, "state_update", timeout=float("inf"))
    agent.close()
    assert b"session/prompt" not in agent.trace.read_bytes()


def test_an_agent_request_id_beyond_64_bits_is_answered_with_that_id(
    acp_agent: Start, tmp_path: Path
) -> None:
    """The agent's request numbered 2**64 + 7 reaches the callback and is answered under
    2**64 + 7 exactly (not a float), so the agent matches it and answers initialize."""
    script = tmp_path / "agent.py"
    script.write_text(BIG_ID_AGENT)
    agent = acp_agent([sys.executable, str(script)])
    asked: list[dict[str, Any]] = []
    agent.client.on_request("fs/read_text_file", lambda p: asked.append(p) or {"content": ""})
    assert agent.client.initialize(protocol=2)["protocolVersion"] == 2
    assert asked == [{"sessionId": "s", "path": "/x"}]
    agent.close()
    answers = [
        rec["msg"]["id"]
        for rec in map(loads_exact, agent.trace.read_bytes().splitlines()[1:])
        if rec.get("src") == "client" and "result" in rec.get("msg", {})
    ]
    assert answers == [BIG + 7]
