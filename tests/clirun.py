"""Running the CLI in-process in tests, as a user would from a shell, at a fixed width."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_trace.cli import main


@dataclass(frozen=True)
class Result:
    """What one command did: its exit code and what it wrote to stdout and stderr."""

    code: int
    out: str
    err: str


Cli = Callable[..., Result]


def runner(cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """A function that runs `acp-trace ARGS...` in `cwd` (keyword `width`, default 80)."""

    def run(*args: str, width: int = 80) -> Result:
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("COLUMNS", str(width))
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setattr(sys, "argv", ["acp-trace", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        code = exit_info.value.code
        captured = capsys.readouterr()
        return Result(code if isinstance(code, int) else 0, captured.out, captured.err)

    return run
