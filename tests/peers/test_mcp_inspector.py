"""`acp-trace mcp` driven by a real MCP client nobody here wrote: the MCP Inspector's
command-line mode (npm @modelcontextprotocol/inspector, pinned in install_peers.sh, run on
the Node 22 of the peers cache), in a loopback-only network namespace with a private HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import peerlib
import pytest

from testpaths import SAMPLES

pytestmark = pytest.mark.peers

TOOLS = ["inspector", "node22"]
INSPECTOR = "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
CONNECT_MS = 600_000  # a hang guard: the server starts in seconds, on a busy machine in more
TOOL_IS_ERROR = 5  # the Inspector's exit code when a tool's result has isError
CLAUDE = "claude-agent-acp-v2-resume.jsonl"


@pytest.fixture(scope="module")
def inspector_ready() -> None:
    """The pinned Inspector and Node 22 are installed (what is missing gets installed); in CI
    (or with ACP_TRACE_REQUIRE_PEERS) a machine that cannot run them fails, else skips."""
    reason = peerlib.missing_tools()
    if reason is not None:
        if os.environ.get("CI") or os.environ.get("ACP_TRACE_REQUIRE_PEERS"):
            pytest.fail(f"the MCP Inspector must run in CI (or ACP_TRACE_REQUIRE_PEERS): {reason}")
        pytest.skip(f"the MCP Inspector cannot run here: {reason}")
    peerlib.install(TOOLS)


def inspect(tmp_path: Path, *args: str, code: int = 0) -> dict[str, Any]:
    """`mcp-inspector --cli acp-trace mcp sample_traces ARGS`: its JSON output (the exit code
    is `code`: 5 when the tool answered with an error)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    node = str(peerlib.node22())
    env = {k: v for k, v in os.environ.items() if k not in ("IS_SANDBOX", "CODEX_HOME")}
    env.update(HOME=str(home), PATH=f"{Path(node).parent}{os.pathsep}{env.get('PATH', '')}")
    argv = [str(peerlib.NETNS_RUN), node, str(peerlib.cache_root() / INSPECTOR), "--cli"]
    argv += ["--connect-timeout", str(CONNECT_MS)]
    argv += [sys.executable, "-m", "acp_trace", "mcp", str(SAMPLES), *args]
    done = subprocess.run(
        argv, capture_output=True, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
        timeout=CONNECT_MS / 1000 + 120,
    )  # fmt: skip
    assert done.returncode == code, done.stderr.decode(errors="replace")
    return dict(orjson.loads(done.stdout))


def test_the_inspector_lists_the_tools(inspector_ready: None, tmp_path: Path) -> None:
    """tools/list: every tool, with its schema."""
    tools = inspect(tmp_path, "--method", "tools/list")["tools"]
    names = {t["name"] for t in tools}
    assert names == {"list_traces", "summary", "replays", "explain_replay", "findings",
                     "latency", "diff", "timeline", "plot"}  # fmt: skip
    assert all(t["inputSchema"]["type"] == "object" and t["description"] for t in tools)


def test_the_inspector_calls_explain_replay(inspector_ready: None, tmp_path: Path) -> None:
    """tools/call explain_replay: the answer to why the claude-agent-acp resume was slow."""
    out = inspect(
        tmp_path, "--method", "tools/call", "--tool-name", "explain_replay",
        "--tool-arg", f"trace={CLAUDE}",
    )  # fmt: skip
    assert out["isError"] is False
    answer = orjson.loads(out["content"][0]["text"])
    assert answer["outcome"] == "unmarked"
    assert "sdk-initialize" in answer["slowest_part"]
    assert [f["rule"] for f in answer["rows"]] == ["marker-missing"]


def test_the_inspector_gets_a_tool_error(inspector_ready: None, tmp_path: Path) -> None:
    """tools/call with a bad argument: a tool error of one line, not a crash."""
    out = inspect(
        tmp_path, "--method", "tools/call", "--tool-name", "replays",
        "--tool-arg", "outcome=great", code=TOOL_IS_ERROR,
    )  # fmt: skip
    assert out["isError"] is True
    text = out["content"][0]["text"]
    assert text.startswith("acp-trace: replays: outcome: ") and "\n" not in text


def test_the_inspector_gets_a_chart(inspector_ready: None, tmp_path: Path) -> None:
    """tools/call plot: image content, a PNG."""
    out = inspect(tmp_path, "--method", "tools/call", "--tool-name", "plot")
    image = out["content"][0]
    assert image["type"] == "image" and image["mimeType"] == "image/png"
    assert image["data"].startswith("iVBORw0KGgo")  # base64 of the PNG signature
