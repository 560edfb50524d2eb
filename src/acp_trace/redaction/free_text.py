"""Credentials in free text, for the recorder (docs/trace-format.md, "Credentials in free
text"): the recorded line's strings and text with each credential's span replaced by
`<redacted:KIND>` (acp_trace.credentials finds them).

- `may_hold(line)`: the prefilter: a rule's keyword, or a `\\u` / `\\/` escape that could
  spell one (the raw bytes of a JSON line are not its text).
- `redact_value(value, where)`: every string (and key) of a parsed message, in place; the
  JSON paths changed. Iterative: a deep value cannot exhaust the stack. `redactions(value)`
  finds them first, once (all strings read together: credentials/values.py).
- `redact_text(line, state, have_all, phrases)`: a line of text; when `have_all` is false
  the line is the first bytes of a longer one, and its tail from the last keyword on (a
  credential cut in two) is dropped before the rest is redacted. `phrases` (stderr): the
  value of a `NAME value` phrase too (`using key VALUE`: credentials.redact_phrases).
"""

from __future__ import annotations

import re

from acp_trace import credentials
from acp_trace.credentials import LineState
from acp_trace.credentials.values import Redactions, in_value, redact_value, redactions

__all__ = [
    "Redactions",
    "in_value",
    "may_hold",
    "note",
    "redact_text",
    "redact_value",
    "redactions",
]

TAIL = 8192  # bytes before a cut in which a keyword means a credential may be cut in two
LEAD = 128  # bytes kept clear before such a keyword (a key's first part comes before it)


def may_hold(line: bytes, *, phrases: bool = False) -> bool:
    """Whether `line` may hold a credential in free text (see the module's docstring);
    `phrases`: or a `NAME value` phrase (a name that may name a credential)."""
    if b"\\" in line and (b"\\u" in line or b"\\/" in line):
        return True
    return credentials.may_hold(line) or (phrases and credentials.may_name_credential(line))


def redact_text(
    line: bytes, state: LineState, *, have_all: bool = True, phrases: bool = False
) -> tuple[bytes, list[str]]:
    """A line of text with its credentials replaced (see the module's docstring). A line
    whose `\\u00XX` or `\\/` escapes spell a credential (JSON printed as text) is replaced
    whole: where the escapes end in the text is not worth guessing."""
    if have_all:
        new, kinds = state.redact(line)
    else:
        new, kinds = credentials.redact_bytes(line[: _cut_point(line)])
    if phrases:
        new, more = credentials.redact_phrases(new, cut=not have_all)
        kinds += more
    if b"\\" in new and _SPELLING.search(new):
        hidden = credentials.find(_SPELLING.sub(_unescape, new))
        if hidden:
            return credentials.placeholder(hidden[0].kind), kinds + [h.kind for h in hidden]
    return new, kinds


_SPELLING = re.compile(rb"\\u00[2-7][0-9a-fA-F]|\\/")


def _unescape(match: re.Match[bytes]) -> bytes:
    text = match.group()
    return b"/" if text == b"\\/" else bytes([int(text[4:], 16)])


def _cut_point(line: bytes) -> int:
    """Where the recorded part of a cut line ends: LEAD bytes before the first keyword in its
    last TAIL bytes (none: the whole line), at a UTF-8 character boundary."""
    start = max(0, len(line) - TAIL)
    first = credentials.first_keyword(line[start:])
    if first is None:
        return len(line)
    cut = max(0, start + first - LEAD)
    while 0 < cut < len(line) and 0x80 <= line[cut] < 0xC0:
        cut -= 1
    return cut


def note(kinds: list[str]) -> str:
    """What a text record says of its replaced credentials."""
    count = len(kinds)
    return (
        f"{count} credential{'s' if count > 1 else ''} replaced ({', '.join(sorted(set(kinds)))})"
    )
