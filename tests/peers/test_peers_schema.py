"""Real agents against the ACP JSON Schema: their own traffic breaks nothing, and a client's
schema-invalid request is blamed on the client, with the error it caused (issue 12).

Each test records schema_client.py (initialize, session/new, session/list, a resume or load of
a fabricated history, three session/prompt requests with `content` instead of `prompt`, a valid
prompt, session/cancel) through `acp-trace record` to the agent, in a loopback-only netns.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import peerlib
import polars as pl
import pytest
from conftest import SID

import acp_trace

pytestmark = pytest.mark.peers

CLIENT = Path(__file__).resolve().parent / "schema_client.py"
BAD_PROMPTS = 3


def record_schema_run(name: str, protocol: int, root: Path) -> tuple[Path, str]:
    project = root / "project"
    project.mkdir()
    env = peerlib.fabricate(name, root, SID, str(project), 5)
    trace = root / "trace.jsonl"
    tap = [sys.executable, "-m", "acp_trace", "record", "-o", str(trace), "--"]
    client = [sys.executable, str(CLIENT), "--protocol", str(protocol), "--session", SID]
    client += ["--cwd", str(project), "--bad", str(BAD_PROMPTS), "--"]
    argv = [str(peerlib.NETNS_RUN), *client, *tap, *peerlib.command(name)]
    done = subprocess.run(argv, env=env, cwd=root, capture_output=True, timeout=300, check=False)
    return trace, done.stdout.decode() + done.stderr.decode()[-3000:]


# (agent, protocol asked for, its answer to a prompt without `prompt`)
RUNS = [
    ("codex-acp-rs", 1, -32602),
    ("codex-acp-ts", 1, -32602),
    ("codex-acp-ts", 2, -32602),
    ("gemini-cli", 1, -32603),
    ("claude-agent-acp", 1, -32602),
    ("claude-agent-acp", 2, -32602),
]


@pytest.mark.parametrize(("name", "protocol", "code"), RUNS, ids=[f"{n}-v{p}" for n, p, _ in RUNS])
def test_real_agent_traffic_is_schema_valid_and_the_client_is_blamed(
    peers_ready: None, tmp_path: Path, name: str, protocol: int, code: int
) -> None:
    """Nothing the agent sent breaks the schema; the client's bad prompts are one error finding
    blamed on the client, and caused-error follows where the agent answers -32602."""
    trace, output = record_schema_run(name, protocol, tmp_path)
    assert trace.exists(), output
    a = acp_trace.analyze(trace)
    tl = a.timeline
    answers = tl.filter(pl.col("request_method") == "session/prompt", pl.col("kind") == "error")
    assert answers["error_code"].to_list()[:BAD_PROMPTS] == [code] * BAD_PROMPTS, output
    found = a.findings(["schema-invalid", "caused-error"])
    assert set(found["side"]) == {"client"}, found.to_dicts()
    (invalid,) = found.filter(pl.col("rule") == "schema-invalid")["message"].to_list()
    assert "PromptRequest" in invalid and "`prompt` is required" in invalid
    assert f"(and {BAD_PROMPTS - 1} more like it" in invalid
    caused = found.filter(pl.col("rule") == "caused-error")["message"].to_list()
    assert len(caused) == (1 if code == -32602 else 0)
    assert all("the client sent `content`, the schema requires `prompt`" in m for m in caused)
