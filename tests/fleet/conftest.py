"""Generated folders of traces for the fleet tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetgen import write_traces


@pytest.fixture(scope="session")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 varied traces plus a stray log file (skipped, not fatal)."""
    folder = write_traces(tmp_path_factory.mktemp("fleet"), 120)
    (folder / "batch1" / "agent.log").write_text("not a trace\n")
    return folder
