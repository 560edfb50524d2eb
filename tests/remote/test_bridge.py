"""`acp-trace bridge URL`: lines on stdin reach a remote agent, its messages come out on
stdout, over WebSocket and over Streamable HTTP (the POSTs carry the connection and session
ids, the SSE streams' events become lines)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from remotelib import env, upstream

from acp_trace.pytest_plugin.agent import AgentUnderTest

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}\n'
# id 5: the test upstream's streams answer it (the bridge waits for it at stdin's end)
PROMPT = (
    b'{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\n'
)
ANSWER = b'{"jsonrpc":"2.0","id":0,"result":{"echo":true}}\n'


def _bridge(url: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "acp_trace", "bridge", url]
    return subprocess.run(
        argv, input=stdin, capture_output=True, timeout=120, env=env(), check=False
    )


def test_websocket_lines_are_frames() -> None:
    """Each stdin line is a text frame; each frame the agent sends is a stdout line; at
    stdin's end the bridge waits for the answers still owed."""
    with upstream() as up:
        done = _bridge(f"ws://127.0.0.1:{up.port}/acp", b"\n" + INIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER  # the blank line is not sent


def test_http_posts_and_streams() -> None:
    """initialize is POSTed and its answer printed; the connection id it names goes with the
    next POST, which carries its session's id too; the streams' events come out as lines
    (the upstream sends the same test stream on each: a replay_complete and the prompt's
    result, which the bridge waits for after stdin's end)."""
    with upstream() as up:
        done = _bridge(f"http://127.0.0.1:{up.port}/acp", INIT + PROMPT)
        seen = up.seen
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2}}
    assert {"jsonrpc": "2.0", "id": 5, "result": {}} in lines
    assert [s["headers"].get("Acp-Connection-Id") for s in seen] == [None, "c1"]
    assert seen[1]["headers"]["Acp-Session-Id"] == "s1"


def test_a_bad_url_is_one_line_and_exit_2() -> None:
    done = _bridge("ftp://x/acp", b"")
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1


def test_the_pytest_plugins_agent_reaches_a_remote_agent(tmp_path: Path) -> None:
    """The plugin's agent under test, started as `acp-trace bridge URL`: its client's request
    reaches the WebSocket agent and gets its answer; the tap records the exchange."""
    with upstream() as up:
        command = [sys.executable, "-m", "acp_trace", "bridge", f"ws://127.0.0.1:{up.port}/acp"]
        agent = AgentUnderTest(command, tmp_path / "agent-1.jsonl", env=env(), timeout=60)
        assert agent.client.request("initialize", {"protocolVersion": 2}) == {"echo": True}
        assert agent.close() == 0
    methods = [
        r.get("msg", {}).get("method")
        for r in map(json.loads, agent.trace.read_text().splitlines())
    ]
    assert "initialize" in methods


def test_hostile_lines_on_stdin_neither_crash_nor_hang_it() -> None:
    """Not JSON, a lone surrogate escape, control characters, a line of 2 MiB and no last
    newline: over HTTP and WebSocket the bridge passes on what it can and ends; a traceback
    never."""
    hostile = (
        b"not json\n"
        b'{"jsonrpc":"2.0","method":"x","params":"\\ud83d \x1b[31m"}\n'
        b"[1, 2\n"
        + b'{"jsonrpc":"2.0","method":"big","params":"'
        + b"x" * (2 << 20)
        + b'"}\n'
        + INIT.rstrip(b"\n")
    )
    with upstream() as up:
        for url in (f"ws://127.0.0.1:{up.port}/acp", f"http://127.0.0.1:{up.port}/acp"):
            done = _bridge(url, hostile)
            assert b"Traceback" not in done.stderr, (url, done.stderr[-2000:])
            assert done.returncode in (0, 1, 2), (url, done.returncode)
            said = done.stderr.decode().splitlines()
            assert len(said) <= 5 and all(line.isprintable() for line in said), (url, said)
