"""Message shapes: the message text with every string value the schema cannot tell apart from
another replaced by one placeholder, so that messages of one shape are validated once.

The schemas compare strings only with `const` and `enum` literals (and `minLength: 1`): no
pattern, no maximum length, formats not asserted (`safe_to_fold` checks that on the vendored
files, or no string is folded). So a string value that cannot be one of those literals (longer
than the longest, or with a character none of them has) can be replaced by any other such
string without changing whether the message is valid, or where it breaks the schema. Keys,
numbers, booleans, nulls, empty strings and strings that could be literals stay as written.

The shape is computed in polars over the `msg` text: first `\\\\` and `\\"` become `\\u005c` and
`\\u0022`, in one pass (the same JSON value, but now every `"` in the text delimits a string),
then each `":` `"value"` whose value may be folded becomes `":"~"`. Where that `":` ends a key, the
result is the same JSON with the value folded. It can also be the start of a string that is a
colon (`[":", "a b"]`): then the match spans structure, puts the `~` outside any string (the
three quotes it replaces are three again), and the shape is not JSON. So a shape that parses
is exact, and the messages of one that does not are validated one by one.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import polars as pl

from acp_trace.analysis.schema.catalog import VERSIONS, literals, schema

PLACEHOLDER = "~"
# The escapes that hide a `"` from the string pattern, and the same JSON value without one:
# replaced in one Aho-Corasick pass (no two of them can start at one place, so the leftmost
# match is the one a left-to-right reading of the escapes finds).
ESCAPES = {"\\\\": "\\u005c", '\\"': "\\u0022"}
# Keywords that constrain a string beyond const/enum; `minLength` 1 is safe (folded strings are
# never empty). Formats are not asserted (validate_formats=False), content* are annotations.
_UNSAFE = {"pattern", "maxLength", "patternProperties", "propertyNames", "uniqueItems"}


def _unsafe_keywords(node: Any, names: bool = False) -> set[str]:
    """The string-constraining keywords a schema uses (`names`: node maps property names)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if not names and (key in _UNSAFE or (key == "minLength" and value != 1)):
                found.add(key)
            found |= _unsafe_keywords(value, names=key in ("properties", "$defs") and not names)
    elif isinstance(node, list):
        for value in node:
            found |= _unsafe_keywords(value)
    return found


@cache
def safe_to_fold() -> bool:
    """True when no vendored schema constrains strings beyond const, enum and minLength 1."""
    return all(not _unsafe_keywords(schema(v).doc) for v in VERSIONS)


@cache
def _pattern() -> str:
    words = literals()
    if PLACEHOLDER in words:  # pragma: no cover - a schema that names "~" would need another
        raise RuntimeError("the shape placeholder is a schema literal")
    longest = max(len(w) for w in words)
    chars = "".join(re.escape(c) for c in sorted(set("".join(words))))
    # a value longer than any literal, or one with a character no literal has
    return rf'":\s*"(?:[^"]{{{longest + 1},}}|[^"]*[^{chars}"][^"]*)"'


def shape_expr(column: str = "msg") -> pl.Expr:
    """The shape of each message text (see the module docstring)."""
    text = pl.col(column)
    if not safe_to_fold():
        return text
    return text.str.replace_many(list(ESCAPES), list(ESCAPES.values())).str.replace_all(
        _pattern(), f'":"{PLACEHOLDER}"'
    )
