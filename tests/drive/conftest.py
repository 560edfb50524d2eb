"""Recordings of demo-client against demo-agent, made once per session through the tap."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import Cli, runner
from drivelib import demo_agent, record


@pytest.fixture(scope="session")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """v2: session/new, a prompt, two resumes with a child; v1: a load of a stored session;
    v2 with a permission request answered in the middle of the replay."""
    folder = tmp_path_factory.mktemp("recordings")
    v2 = demo_agent("--turns", "5", "--children", "1")
    v1 = demo_agent("--turns", "5", "--session", "sess_stored")
    asks = demo_agent("--turns", "5", "--fault", "request-before-marker")
    return {
        "v2": record(folder / "v2.jsonl", v2, protocol=2, resumes=2, prompts=("hello",)),
        "v1": record(folder / "v1.jsonl", v1, protocol=1, session="sess_stored"),
        "asks": record(folder / "asks.jsonl", asks, protocol=2, resumes=1),
    }


@pytest.fixture(autouse=True)
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and XDG_STATE_HOME are empty folders of the test's own (no ~/.local/state, no
    trace folder yet), and $ACP_TRACE_DIR is unset: what a fresh machine has."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ACP_TRACE_DIR", raising=False)
    return home


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`acp-trace ARGS` in-process, in tmp_path, 100 columns wide."""
    run = runner(tmp_path, monkeypatch, capsys)
    return lambda *args, width=100: run(*args, width=width)
