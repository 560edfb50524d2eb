"""Tests of the header fields' readers in trace/format.py: odd values read as absent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from acp_trace.trace.format import header_items, header_timing, started_at


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ([{"seq": 1}, {"seq": 2}], [{"seq": 1}, {"seq": 2}]),
        ([{"seq": 1}, 5, "x", None, [1]], [{"seq": 1}]),  # only the objects
        ([], []),
        # near misses: what is no list has no items
        (5, []),
        (True, []),
        (1.5, []),
        ("[{}]", []),
        ({"seq": 1}, []),
        (None, []),
    ],
)
def test_header_items_are_the_objects_of_a_list(value: Any, items: list[dict[str, Any]]) -> None:
    """A list field yields its objects; any other value (or none) yields nothing."""
    assert header_items({"ambiguous": value}, "ambiguous") == items
    assert header_items({}, "ambiguous") == []


@pytest.mark.parametrize(
    ("value", "when"),
    [
        ("2026-12-01T10:11:06.123456Z", datetime(2026, 12, 1, 10, 11, 6, 123456, tzinfo=UTC)),
        ("2026-12-01T11:11:06+01:00", datetime(2026, 12, 1, 10, 11, 6, tzinfo=UTC)),
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
        # near misses: beyond what UTC can hold, not a time, not a string
        ("0001-01-01T00:00:00+01:00", None),
        ("9999-12-31T23:59:59-01:00", None),
        ("yesterday", None),
        ("", None),
        (1733047866, None),
        (None, None),
    ],
)
def test_started_at_is_a_utc_time_or_none(value: Any, when: datetime | None) -> None:
    """An RFC 3339 start becomes UTC; one UTC cannot hold, or no time at all, is None."""
    assert started_at(value) == when


@pytest.mark.parametrize(
    ("head", "timing"),
    [
        ({"timing": "source"}, "source"),
        ({"timing": "ordering-only"}, "ordering-only"),
        # near misses: missing, or not a string: the format's default
        ({}, "tap"),
        ({"timing": 5}, "tap"),
        ({"timing": None}, "tap"),
        ({"timing": ["source"]}, "tap"),
    ],
)
def test_header_timing_is_a_string_or_the_default(head: dict[str, Any], timing: str) -> None:
    """A header's `timing` string is taken; a missing or odd one reads as `tap`."""
    assert header_timing(head) == timing
