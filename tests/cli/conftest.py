"""Running the CLI in-process, as a user would from a shell, at a fixed terminal width."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import Cli, runner
from tracebuilder import TraceBuilder


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`cli("replays", "t.jsonl", width=80)` runs `acp-trace replays t.jsonl` in tmp_path."""
    return runner(tmp_path, monkeypatch, capsys)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """t.jsonl in tmp_path: a v2 resume with a marker, a child, a state snapshot and a response,
    then a v2 resume answered before its marker."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    rid = b.resume("sess_1", dt=2)
    b.history("sess_1", 2, dt=3)
    b.update("sess_1", "subagent_update", sessionId="child_1")
    b.history("child_1", 1)
    b.marker("child_1")
    b.marker("sess_1", dt=2)
    b.state("sess_1")
    b.response(rid, {}, dt=450)
    r2 = b.resume("sess_2")
    b.history("sess_2", 1)
    b.response(r2, {}, dt=120)
    b.event("exit", code=0, signal=None)
    return b.write(tmp_path / "t.jsonl")
