"""Names that say their value is a credential (`names_credential`), and regexes that find
every such name in a text, and more (`NAME_GATE`): the recorder looks closer only where one
matches (issue 34). Also the one way this package compiles its RE2 regexes (`compile_bytes`).
"""

from __future__ import annotations

import functools
import re

import re2  # type: ignore[import-untyped]  # google-re2 ships no types


def keyword_set(keywords: list[str]) -> re2.Set:
    """An RE2 set of literal ASCII keywords in any case: `Match(data)` gives the indexes of
    those that occur in `data`, in one pass, however often they occur."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.case_sensitive = False
    found = re2.Set.SearchSet(options)
    for keyword in keywords:
        if not keyword.isascii():
            raise ValueError(f"{keyword!r}: keywords are ASCII")
        found.Add(re.escape(keyword).encode())
    found.Compile()
    return found


def compile_bytes(pattern: bytes) -> re2._Regexp:
    """An RE2 regex over bytes (offsets in bytes): linear time whatever the text."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # bytes in, byte offsets out
    options.max_mem = 64 << 20
    return re2.compile(pattern, options)


# A name names a credential when, split into ASCII words (camelCase, snake_case, kebab-case,
# dots) and lowercased, one word is in CREDENTIAL_WORDS, or the words run together contain one
# of CREDENTIAL_PARTS, or they end with "key". Non-ASCII letters separate words and never match.
CREDENTIAL_WORDS = frozenset({"auth", "key", "pat", "pwd", "pin", "otp", "jwt", "sig"})
CREDENTIAL_PARTS = (
    "token",
    "secret",
    "passw",
    "passphrase",
    "cookie",
    "credential",
    "authoriz",
    "oauth",
    "bearer",
    "signature",
    "apikey",
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@functools.lru_cache(maxsize=4096)  # the same few names again and again
def names_credential(name: str) -> bool:
    """True when `name` says its value is a credential (see the rule above)."""
    words = [word.lower() for word in _WORD.findall(name)]
    flat = "".join(words)
    return (
        flat.endswith("key")
        or any(word in CREDENTIAL_WORDS for word in words)
        or any(part in flat for part in CREDENTIAL_PARTS)
    )


def _spelled(word: str, gap: bytes) -> bytes:
    """A regex for `word` in any case, with `gap` allowed between its letters."""
    return gap.join(b"[%s%s]" % (c.encode(), c.upper().encode()) for c in word)


# What may stand between the letters of a name's part: anything `names_credential` drops
# (neither ASCII letters nor digits: `_`, `.`, `-`, spaces in a JSON key, non-ASCII letters,
# quotes that a shell removes); between the letters of a word, only quotes a shell removes.
# In the raw bytes of a JSON line a string's tab or newline is spelled `\t` or `\n`, and a
# quote `\"`: there a backslash and such a letter may stand between them too.
_DROPPED, _QUOTES = rb"[^A-Za-z0-9]*", rb"[\x22']*"
_DROPPED_RAW, _QUOTES_RAW = rb"(?:[^A-Za-z0-9]|\\[bfnrt])*", rb"[\x22'\\]*"


def part_alternatives(gap: bytes) -> bytes:
    """A regex for any CREDENTIAL_PART, `gap` allowed between its letters."""
    return b"|".join(_spelled(part, gap) for part in CREDENTIAL_PARTS)


def word_alternatives(key_gap: bytes, word_gap: bytes) -> bytes:
    """A regex for "key" (`key_gap` between its letters) or any other CREDENTIAL_WORD
    (`word_gap` between its letters); the caller says what may follow."""
    words = sorted(CREDENTIAL_WORDS - {"key"})
    return b"|".join([_spelled("key", key_gap), *(_spelled(word, word_gap) for word in words)])


# NAME_GATE finds every name that `names_credential` accepts, and more: a name names a
# credential only when its letters, once the characters that split words are dropped, hold
# a CREDENTIAL_PART, or "key" that is not followed by a lowercase letter (its end, or the
# word "key"), or a CREDENTIAL_WORD as a word of its own (letters side by side, not followed
# by a lowercase letter). Text in which it finds nothing holds no such name.
def _name_gate(parts_gap: bytes, words_gap: bytes) -> bytes:
    return (
        part_alternatives(parts_gap)
        + b"|(?:"
        + word_alternatives(parts_gap, words_gap)
        + rb")(?:[^a-z]|\z)"
    )


NAME_GATE_PATTERN = _name_gate(_DROPPED, _QUOTES)
NAME_GATE_RAW_PATTERN = _name_gate(_DROPPED_RAW, _QUOTES_RAW)  # over a JSON line's bytes
NAME_GATE = compile_bytes(NAME_GATE_PATTERN)


def may_name_credential(data: bytes) -> bool:
    """False only when no name in `data` can name a credential (see NAME_GATE)."""
    return NAME_GATE.search(data) is not None


def name_gate_or(alternatives: bytes, *, raw: bool = False) -> re2._Regexp:
    """NAME_GATE (`raw`: its form for the raw bytes of a JSON line, whose `\\u` escapes the
    caller has ruled out) with other alternatives (RE2: linear whatever the text)."""
    return compile_bytes(
        alternatives + b"|" + (NAME_GATE_RAW_PATTERN if raw else NAME_GATE_PATTERN)
    )
