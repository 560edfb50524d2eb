"""Tests of the JSON helpers in acp_trace/jsonrpc.py that read values of any type."""

from __future__ import annotations

import math
from typing import Any

import pytest

from acp_trace.jsonrpc import as_int, json_bytes, json_text, loads, loads_exact


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


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (b'{"n":1e400,"s":"\\ud83d"}', '{"n":null,"s":"\\ud83d"}'),  # never Infinity
        (b"[-1e999,12345678901234567890123]", "[null,12345678901234567890123]"),
        (b'{"k":"\\udc00x","big":1e308}', '{"k":"\\udc00x","big":1e+308}'),
        # near misses: what orjson writes itself is left as it is
        (b'{"n":1.5,"s":"\\u00e9"}', '{"n":1.5,"s":"\xe9"}'),
    ],
)
def test_json_bytes_writes_strict_json_of_any_parsed_value(source: bytes, text: str) -> None:
    """A value the stdlib parser read (1e400 as inf, a lone surrogate) is written as strict
    JSON, UTF-8 encodable, that reads back the same, surrogate for surrogate."""
    value = loads(source)
    written = json_bytes(value)
    assert written.decode() == text
    again = loads_exact(written)  # exact integers, as the stdlib parser first read them
    assert json_bytes(again) == written
    assert json_bytes(value, indent=True).endswith(b"\n")
    assert loads_exact(json_bytes(value, indent=True)) == again


def test_json_bytes_writes_values_deeper_than_any_recursion_limit() -> None:
    """A value nested 5,000 deep holding what orjson refuses is still written, compact."""
    value: list[Any] = []
    inner = value
    for _ in range(5000):
        nxt: list[Any] = ["\ud83d", 10**30, math.inf]
        inner.append(nxt)
        inner = nxt
    text = json_bytes(value, indent=True).decode()
    assert (
        text.startswith('[["\\ud83d",1000000000000000000000000000000,null,[')
        and "Infinity" not in text
    )
    assert text.count("[") == 5001
