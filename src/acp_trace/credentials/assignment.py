"""The `credential-assignment` rule's finder: the value in `NAME=value` (`export NAME=value`,
`NAME="value"`, `?api_key=value`) where NAME names a credential (`names_credential`).

A regex over every `NAME=` of a text, each checked in Python, cost 15 to 50 us per candidate:
a source file has one on most lines, and a replayed history is mostly source files (issue
34). Here RE2 finds only the names that hold a credential's part or word (`ASSIGN_GATE`, a
superset of what `names_credential` accepts) followed by `=`, and each is checked as the
regex did: NAME is 1 to 128 of `[A-Za-z0-9_.-]`, starts with a letter or `_`, has no such
character before it; the value is a quoted string on one line or a run of characters that
end no shell word. A value is read once: a name inside an accepted candidate's value is not
another candidate.
"""

from __future__ import annotations

import re

from acp_trace.credentials.names import (
    compile_bytes,
    names_credential,
    part_alternatives,
    word_alternatives,
)

NAME_LIMIT = 128
_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_GAP = rb"[_.\-]*"  # between the letters of a part, inside one name
ASSIGN_GATE = compile_bytes(
    b"(?:"
    + part_alternatives(_GAP)
    + rb")[A-Za-z0-9_.\-]{0,127}=|(?:"
    + word_alternatives(_GAP, b"")
    + rb")(?:[A-Z0-9_.\-][A-Za-z0-9_.\-]{0,126})?="
)
# The value: a quoted string on one line, else a run of characters that end no shell word
# (RE2's \s, which the rule was written with: no \v).
_VALUE = re.compile(rb"\"[^\"\n]*\"|'[^'\n]*'|[^\t\n\f\r \"'`;&|<>]+")


def may_assign(data: bytes) -> bool:
    """False only when `data` holds no `NAME=` whose NAME may name a credential."""
    return ASSIGN_GATE.search(data) is not None


def find_assignments(data: bytes) -> list[tuple[int, int]]:
    """The spans of the values of credential assignments in `data` (inside the quotes of a
    quoted one; an empty value, or one already `<redacted...`, is none)."""
    spans: list[tuple[int, int]] = []
    read_to = 0
    for hit in ASSIGN_GATE.finditer(data):
        equals = hit.end() - 1
        start = _name_start(data, hit.start())
        if start is None or start < read_to or equals - start > NAME_LIMIT:
            continue
        value = _VALUE.match(data, equals + 1)
        if value is None:
            continue
        read_to = value.end()
        if not names_credential(data[start:equals].decode("latin-1")):
            continue
        begin, end = value.span()
        if data[begin] in b"\"'" and end - begin > 1 and data[end - 1] == data[begin]:
            begin, end = begin + 1, end - 1
        if end > begin and not data.startswith(b"<redacted", begin):
            spans.append((begin, end))
    return spans


def _name_start(data: bytes, at: int) -> int | None:
    """Where the name holding position `at` starts: None when it is longer than the limit
    or does not start with a letter or `_`."""
    start = at
    while start > 0 and data[start - 1] in _NAME:
        start -= 1
        if at - start > NAME_LIMIT:
            return None
    return start if data[start] in _FIRST else None


# ---------------------------------------------------------------- `NAME value` phrases

# The same names in a phrase rather than an assignment: `using key VALUE`, `token: VALUE`,
# `"apiKey": "VALUE"` (a closing quote, spaces, one `:` or blanks, an opening quote). Only
# stderr is read for them (redaction/free_text.py): in prose and source files such phrases
# are common and seldom hold a secret. The value must look like one: 8 or more token
# characters, not starting like a path or a flag, with both a letter and a digit.
_RUN = re.compile(rb"[A-Za-z0-9_.\-]+")
# Possessive: each part is read once, whatever a long run of blanks is followed by.
_PHRASE = re.compile(rb"""["']?+[ \t]*+(?::[ \t]*+)?["']?+([A-Za-z0-9_+][A-Za-z0-9._~+/\-]*+=*+)""")
_LETTER, _DIGIT = re.compile(rb"[A-Za-z]"), re.compile(rb"[0-9]")
PHRASE_MIN = 8


def find_phrases(data: bytes, *, cut: bool = False) -> list[tuple[int, int]]:
    """The spans of the values of `NAME value` phrases in `data` where NAME names a
    credential (see above). `cut`: `data` is the first bytes of a longer line, and a value
    that reaches its end is replaced whatever it looks like (the rest of it is not there)."""
    spans: list[tuple[int, int]] = []
    for run in _RUN.finditer(data):
        name = run.group()
        if len(name) > NAME_LIMIT or name[0] not in _FIRST or name[-1:] in b".-":
            continue
        if not names_credential(name.decode("latin-1")):
            continue
        value = _PHRASE.match(data, run.end())
        if value is None:
            continue
        begin, end = value.span(1)
        if not any(c in b" \t:" for c in data[run.end() : begin]):
            continue  # `NAME"VALUE`: no phrase
        if (cut and end == len(data)) or _looks_secret(data[begin:end]):
            spans.append((begin, end))
    return spans


def _looks_secret(value: bytes) -> bool:
    return len(value) >= PHRASE_MIN and bool(_LETTER.search(value) and _DIGIT.search(value))
