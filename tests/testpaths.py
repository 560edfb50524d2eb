"""Where the tests' own files are, for test modules at any depth under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
SCRIPTS = TESTS / "scripts"
SAMPLES = ROOT / "sample_traces"
