"""The `live` fixture: a mock agent started in-process on a recording (tests/mocklive.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_trace.mock import MockOptions
from mocklive import Live


@pytest.fixture
def live() -> Iterator[Callable[..., Live]]:
    """`live(trace, **options)` starts a mock on the trace (speed 0 unless given)."""
    started: list[Live] = []

    def start(*traces: Path, **options: Any) -> Live:
        options.setdefault("speed", 0.0)
        conn = Live(MockOptions(traces=tuple(map(str, traces)), **options))
        started.append(conn)
        return conn

    yield start
    for conn in started:
        if conn.thread.is_alive():
            conn.close()
