"""Strict tooling is part of the test suite: ruff and mypy must pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_passes() -> None:
    """ruff finds no problem in src/ and tests/."""
    result = _run(str(BIN / "ruff"), "check", "src", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes() -> None:
    """mypy in strict mode finds no problem in src/."""
    result = _run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout + result.stderr
