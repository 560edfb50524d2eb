"""Tests of the JSON helpers in acp_trace/jsonrpc.py that read values of any type."""

from __future__ import annotations

from typing import Any

import pytest

from acp_trace.jsonrpc import as_int, json_text


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (0, 0),
        (-(2**63), -(2**63)),
        (2**63 - 1, 2**63 - 1),
        # near misses: beyond 64 bits, booleans, floats, text
        (2**63, None),
        (-(2**63) - 1, None),
        (10**400, None),
        (True, None),
        (2.0, None),
        ("2", None),
        (None, None),
    ],
)
def test_as_int_takes_the_integers_64_bits_hold(value: Any, read: int | None) -> None:
    """An integer an Int64 column holds is taken; anything else, a boolean too, is None."""
    assert as_int(value) == read


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": [1, "x"]}, '{"a":[1,"x"]}'),
        ({"n": 10**30}, '{"n":1000000000000000000000000000000}'),  # orjson refuses it
        (["\ud83d"], '["\\ud83d"]'),  # a lone surrogate, escaped
    ],
)
def test_json_text_writes_any_parsed_value(value: Any, text: str) -> None:
    """Compact JSON of any parsed value, huge integers and lone surrogates included."""
    assert json_text(value) == text
