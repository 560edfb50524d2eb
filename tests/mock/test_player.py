"""The player's clock and the process start it times a waiting initialize from."""

from __future__ import annotations

import time

from acp_trace.mock.player import _Clock
from acp_trace.mock.server import process_start


def test_a_line_is_due_its_recorded_offset_divided_by_the_speed() -> None:
    """At speed 2 a line recorded 2 s after the request is due 1 s after the live request."""
    clock = _Clock(speed=2.0, live=10.0, rec=1_000_000_000)
    assert clock.due(3_000_000_000) == 11.0
    assert clock.due(None) is None
    clock.rebase(20.0, 5_000_000_000)
    assert clock.due(6_000_000_000) == 20.5
    clock.rebase(30.0, None)  # an answer recorded without a time keeps the old anchor
    assert clock.due(6_000_000_000) == 20.5


def test_speed_zero_and_untimed_recordings_never_wait() -> None:
    """--speed 0, or a recording without timestamps, makes no line due later."""
    assert _Clock(speed=0.0, live=10.0, rec=0).due(5_000_000_000) is None
    assert _Clock(speed=1.0, live=10.0, rec=None).due(5_000_000_000) is None


def test_process_start_is_before_now() -> None:
    """The process started before this test ran, and within the test session's lifetime."""
    start = process_start()
    assert start <= time.monotonic()
    assert time.monotonic() - start < 24 * 3600
