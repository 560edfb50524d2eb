"""Running the CLI in-process, as a user would from a shell, at a fixed terminal width."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import Cli, runner
from docs_commands import readme_trace


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`cli("replays", "t.jsonl", width=80)` runs `acp-trace replays t.jsonl` in tmp_path."""
    return runner(tmp_path, monkeypatch, capsys)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """t.jsonl in tmp_path: the README's example trace (docs_commands.readme_trace)."""
    return readme_trace(tmp_path / "t.jsonl")
