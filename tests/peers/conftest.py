"""Fixtures for the peer tests: installed pinned agents and a recorded run per test."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import peerlib
import pytest

SID = "0198c0de-0000-7000-8000-00000000a11c"
TURNS = 20


@pytest.fixture(scope="session")
def peers_ready() -> None:
    """The pinned agents are installed (installing what is missing); skip without npm/unshare."""
    reason = peerlib.missing_tools()
    if reason is not None:
        if os.environ.get("CI") or os.environ.get("ACP_TRACE_REQUIRE_PEERS"):
            pytest.fail(f"peer agents must run in CI (or ACP_TRACE_REQUIRE_PEERS): {reason}")
        pytest.skip(f"peer agents cannot run here: {reason}")
    peerlib.install()


RecordPeer = Callable[..., peerlib.Run]


@pytest.fixture
def record_peer(peers_ready: None, tmp_path: Path) -> RecordPeer:
    """Record one peer through the tap with a fresh private HOME and a fabricated history."""

    def run(name: str, protocol: int, turns: int = TURNS, sid: str = SID, **kw: Any) -> peerlib.Run:
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        env = peerlib.fabricate(name, tmp_path, SID, str(project), turns)
        return peerlib.record(
            name, tmp_path, env, sid=sid, cwd=str(project), protocol=protocol, **kw
        )

    return run


def agent_messages(run: peerlib.Run) -> list[Any]:
    """Every JSON message the agent wrote, in order (blank and non-JSON lines skipped)."""
    out = []
    for line in run.agent_wrote.read_bytes().splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return out


def window_updates(run: peerlib.Run, request_id: int, sid: str = SID) -> list[dict[str, Any]]:
    """The agent's session/update bodies on `sid` before its response to `request_id`."""
    out = []
    for msg in agent_messages(run):
        if msg.get("id") == request_id and "method" not in msg:
            return out
        params = msg.get("params") or {}
        if msg.get("method") == "session/update" and params.get("sessionId") == sid:
            out.append(params["update"])
    raise AssertionError(f"no response to request {request_id} in {run.agent_wrote}")
