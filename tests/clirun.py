"""Running the CLI in-process in tests, as a user would from a shell, at a fixed width."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_trace.cli import main, terminal


@dataclass(frozen=True)
class Result:
    """What one command did: its exit code and what it wrote to stdout and stderr."""

    code: int
    out: str
    err: str


Cli = Callable[..., Result]


_PIPE = terminal.stdout_console  # the real one: under pytest, stdout is no terminal


def as_terminal(monkeypatch: pytest.MonkeyPatch, width: int | None) -> None:
    """Make stdout look like a terminal of `width` columns without colour (as with NO_COLOR);
    None: leave it what it is under pytest, a pipe (tables are not fitted)."""
    from rich.console import Console

    if width is None:
        monkeypatch.setenv("COLUMNS", "80")  # a pipe ignores it
        monkeypatch.setattr(terminal, "stdout_console", _PIPE)
        return
    monkeypatch.setenv("COLUMNS", str(width))

    def console() -> Console:
        return Console(
            file=sys.stdout, width=width, force_terminal=True, no_color=True, markup=False,
            emoji=False, highlight=False,
        )  # fmt: skip

    monkeypatch.setattr(terminal, "stdout_console", console)


def runner(cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """A function that runs `acp-trace ARGS...` in `cwd` (keyword `width`, default 80: on a
    terminal of that many columns, without colour; `width=None`: into a pipe)."""

    def run(*args: str, width: int | None = 80) -> Result:
        monkeypatch.chdir(cwd)
        as_terminal(monkeypatch, width)
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setattr(sys, "argv", ["acp-trace", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        code = exit_info.value.code
        captured = capsys.readouterr()
        return Result(code if isinstance(code, int) else 0, captured.out, captured.err)

    return run
