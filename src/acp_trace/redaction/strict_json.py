"""Strict JSON for the redactor's exact path: a parse that refuses anything a receiver might
read another way (not UTF-8, NaN, trailing bytes, a duplicate key, a number it cannot hold
exactly), and the small helpers around it. Reasons never quote the line's content."""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

import orjson


class NotStrict(ValueError):
    """A line the exact path cannot parse strictly; the message says why, without content."""


def strict_loads(data: bytes, named: frozenset[str] = frozenset()) -> Any:
    """Parse JSON as strictly as a receiver that rejects anything doubtful (NotStrict); a
    duplicate key among `named` is named in the reason, any other is not (it may be content).

    The common case first (issue 34): a line that orjson reads and writes back byte for byte
    is compact JSON, UTF-8, with no duplicate key (one would be missing from what is written
    back), no NaN or infinity and no number orjson cannot hold (it refuses both): exactly
    what the strict parse below accepts, and the value is the same. It costs a tenth of it."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    else:
        if writes_back(value, data):
            return value
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotStrict("not UTF-8") from None
    try:
        return json.loads(
            text,
            object_pairs_hook=partial(_unique, named),
            parse_constant=_constant,
            parse_float=_finite,
        )
    except NotStrict:
        raise
    except RecursionError:
        raise NotStrict("nested too deeply to parse") from None
    except json.JSONDecodeError as exc:
        raise NotStrict(f"not strict JSON ({exc.msg} at byte {exc.pos})") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise NotStrict(f"not JSON that can be read exactly ({str(exc).split(':')[0]})") from None


def writes_back(value: Any, data: bytes) -> bool:
    """Whether orjson writes `value` (parsed from `data`) back as `data`, byte for byte."""
    try:
        return orjson.dumps(value) == data
    except orjson.JSONEncodeError:
        return False


def dumps(value: Any) -> bytes:
    """Compact JSON; the stdlib serializes what orjson refuses (huge integers, lone surrogates)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


_TOP_KEY = re.compile(rb'[ \t\r\n]*"([A-Za-z_]{1,32})"[ \t\r\n]*:[ \t\r\n]*')
_SCALAR = re.compile(rb'"(?:[^"\\]|\\.){0,1024}"|-?[0-9]{1,40}(?![0-9.eE])|true|false|null')
_COMMA = re.compile(rb"[ \t\r\n]*,")


def top_level_scalars(head: bytes) -> dict[str, Any]:
    """The members of the object starting `head` up to the first one that is not a short
    scalar (`{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{...` gives
    jsonrpc, id and method)."""
    fields: dict[str, Any] = {}
    pos = 1
    while (key := _TOP_KEY.match(head, pos)) and (value := _SCALAR.match(head, key.end())):
        try:
            fields[key.group(1).decode()] = json.loads(value.group())
        except ValueError:
            break
        comma = _COMMA.match(head, value.end())
        if comma is None:
            break
        pos = comma.end()
    return fields


def _unique(named: frozenset[str], pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            which = f" ({key})" if key in named else ""
            raise NotStrict(f"a duplicate key{which}: which one the receiver read is unknown")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise NotStrict(f"not strict JSON ({name})")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise NotStrict("not JSON that can be read exactly (a number beyond the double range)")
    return number
