"""What a secret looks like in a name or a string (docs/trace-format.md, "Redaction").

- `names_credential(name)` (from acp_trace.credentials, shared with the free-text rules): a key, flag, header, variable or query parameter whose name says it
  holds a credential (`apiKey`, `--auth-token`, `Authorization`, `GITHUB_PAT`, `client_secret`).
- `scrub_url`, `scrub_words`, `scrub_text`: the same string or argv with only the secret parts
  replaced by `<redacted>` (URL userinfo and credential parameters, `--token X`, `--api-key=X`,
  `-H "Authorization: X"`, `API_KEY=X`, `-u user:X`), everything else kept as it was.
- `fragment_may_hold_secret(text)`: whether a line that is not a JSON-RPC message (stray stdout,
  a line of a message pretty-printed over several lines) could hold a secret.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from acp_trace.credentials import (
    CREDENTIAL_PARTS,
    CREDENTIAL_WORDS,
    name_gate_or,
    names_credential,
)

__all__ = [
    "CREDENTIAL_PARTS",
    "CREDENTIAL_WORDS",
    "REDACTED",
    "fragment_may_hold_secret",
    "may_scrub",
    "may_scrub_raw",
    "names_credential",
    "scrub_text",
    "scrub_url",
    "scrub_words",
]

REDACTED = "<redacted>"

URL_PARAMETERS = frozenset({"code"})  # OAuth authorization codes, in URLs only
HEADER_FLAGS = frozenset({"h", "header", "headers"})
USER_FLAGS = frozenset({"u", "user"})
AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
FRAGMENT_KEYS = frozenset(
    {"value", "env", "headers", "args", "url", "baseurl", "mcpservers", "authmethods", "_meta"}
)

# A URL: a scheme (its leftmost letter on) then `://`. Tried only where a run of scheme
# characters starts (the lookbehind), so a long run with no `://` is read once, not once per
# character (that was quadratic: 4 to 7 s for a 60 KB stderr line, half an hour for a 1 MB
# argument); group 1 is the URL.
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[0-9+.-]*+([A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*)")
_FLAG = re.compile(r"(--?)([A-Za-z][\w.-]*)(?:=(.*))?\Z", re.S)
_ENV_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*)([ \t]*:[ \t]*)(.*)\Z", re.S)
_SHELL_WORD = re.compile(r"""(?:[^\s'"]|'[^']*'|"(?:[^"\\]|\\.)*")+""")
# The same words once a `"` was left open: no later `"` can close a quote then (each one is
# escaped in the open quote's reading, so it reads the rest the same way and fails too), and
# trying every one again read the rest of the text once per `"`: 71 s for 60 KB of `\"`.
_WORD_WITHOUT_QUOTES = re.compile(r"""(?:[^\s'"]|'[^']*')+""")
_QUOTED = re.compile(r"'([^']*)'|" + r'"((?:[^"\\]|\\.)*)"')
_MAX_DEPTH = 4  # scripts inside scripts (`sh -c "bash -c '...'"`)


def scrub_url(url: str) -> str:
    """`url` with its userinfo and its credential query/fragment parameters replaced."""
    start = url.find("://")
    if start < 0:
        return url
    start += 3
    end = start
    while end < len(url) and url[end] not in "/?#":
        end += 1
    authority = url[start:end]
    at = authority.rfind("@")
    if at >= 0:
        user, colon, _password = authority[:at].partition(":")
        authority = (f"{user}:{REDACTED}" if colon else REDACTED) + authority[at:]
    return url[:start] + authority + _scrub_parameters(url[end:])


def _scrub_parameters(tail: str) -> str:
    """The `/path?query#fragment` part with every credential parameter's value replaced."""
    out = []
    for piece in re.split(r"([?#&;])", tail):
        name, equals, _value = piece.partition("=")
        if equals and _is_credential_parameter(unquote(name)):
            piece = f"{name}={REDACTED}"
        out.append(piece)
    return "".join(out)


def _is_credential_parameter(name: str) -> bool:
    return names_credential(name) or name.lower() in URL_PARAMETERS


def scrub_words(words: list[object], depth: int = 0) -> list[object]:
    """An argv with the secrets of each word replaced; a word after a credential flag
    (`--token X`, `-H X`, `-u user:X`) is its value. Non-strings are kept."""
    out: list[object] = []
    expect: str | None = None
    for word in words:
        if not isinstance(word, str):
            out.append(word)
            expect = None
            continue
        out.append(_scrub_value(word, expect, depth) if expect else _scrub_word(word, depth))
        expect = _expectation(word, expect)
    return out


def _expectation(word: str, previous: str | None) -> str | None:
    """What the next word is: a secret, a header, `user:password`, or nothing special."""
    if previous == "secret" and word.lower() in AUTH_SCHEMES:
        return "secret"  # `Authorization: Bearer X` split into words
    flag = _FLAG.match(word)
    if flag and flag.group(3) is None:
        return _flag_kind(flag.group(2))
    header = _HEADER.match(word)
    if header and not header.group(3) and names_credential(header.group(1)):
        return "secret"  # `Authorization:` then the value
    return None


def _flag_kind(name: str) -> str | None:
    lower = name.lower()
    if lower in HEADER_FLAGS:
        return "header"
    if lower in USER_FLAGS:
        return "userpass"
    return "secret" if len(name) > 1 and names_credential(name) else None


def _scrub_value(word: str, expect: str, depth: int) -> str:
    if word.startswith("-") and _FLAG.match(word):
        return _scrub_word(word, depth)  # the flag had no value: this is the next flag
    if expect == "header":
        return _scrub_header(word, always=True)
    if expect == "userpass":
        user, colon, _password = word.partition(":")
        return f"{user}:{REDACTED}" if colon else word
    return REDACTED


def _scrub_header(word: str, *, always: bool) -> str:
    header = _HEADER.match(word)
    if header is None or "://" in word:
        return REDACTED if always else word
    name, separator, value = header.groups()
    if value and (always or names_credential(name)):
        return f"{name}{separator}{REDACTED}"
    return word


def _scrub_word(word: str, depth: int) -> str:
    """One word of an argv: a script, `--flag=value`, `NAME=value`, `Name: value`, URLs."""
    if depth < _MAX_DEPTH and any(c.isspace() for c in word) and not _HEADER.match(word):
        return scrub_text(word, depth + 1)
    flag = _FLAG.match(word)
    if flag and flag.group(3) is not None:
        dashes, name, value = flag.groups()
        kind = _flag_kind(name)
        if kind == "secret":
            return f"{dashes}{name}={REDACTED}"
        if kind is not None:
            return f"{dashes}{name}={_scrub_value(value, kind, depth)}"
        return f"{dashes}{name}={_scrub_word(value, depth)}"
    env = _ENV_WORD.match(word)
    if env:
        name, value = env.groups()
        return f"{name}={REDACTED if names_credential(name) else _scrub_word(value, depth)}"
    if "://" in word:
        return _URL.sub(lambda m: m.group()[: m.start(1) - m.start()] + scrub_url(m.group(1)), word)
    return _scrub_header(word, always=False)


# What `scrub_text` can change: a URL (`://`, quotes a shell removes allowed between), the
# word after a flag `-h`, `-u`, `--header`, `--user` (`-` then `h` or `u`, quotes and dashes
# between), and whatever a credential name names (NAME_GATE).
_SCRUB_GATE = name_gate_or(rb""":['"]*/['"]*/|-[-'"]*[hHuU]""")


def may_scrub(text: str) -> bool:
    """False only when `scrub_text(text)` is `text` (see _SCRUB_GATE)."""
    return _SCRUB_GATE.search(text.encode("utf-8", "surrogatepass")) is not None


# The same over the raw bytes of a JSON line without `\\u` escapes (they can spell anything;
# the caller rules them out): a string's quote is spelled `\\"`, a slash may be `\\/`, a tab
# `\\t`, so a backslash may stand where a quote or a dash may, and in a `://`.
_SCRUB_RAW_GATE = name_gate_or(rb""":['"\\]*/['"\\]*/|:['"\\]*\\/|-[-'"\\]*[hHuU]""", raw=True)


def may_scrub_raw(line: bytes) -> bool:
    """False only when no string or key of the JSON `line` can be changed by `scrub_text` or
    names a credential; a line with a `\\u` escape always may."""
    return b"\\u" in line or _SCRUB_RAW_GATE.search(line) is not None


def scrub_text(text: str, depth: int = 0) -> str:
    """A command line or script with each shell word scrubbed as by `scrub_words`; quoting
    and spacing are kept, a quoted word stays quoted.

    Only the words where _SCRUB_GATE matches, and the words their flags or headers make a
    value, can change; the others are not looked at (splitting a source file or a tool's
    output into shell words and reading each costs about a millisecond per kilobyte, and
    such text seldom has anything to scrub: issue 34)."""
    starts = _gate_starts(text)
    if not starts:
        return text
    spans = _shell_spans(text)
    out, last, changed = [], 0, False
    for index, new in _scrub_marked(text, spans, _words_at(spans, starts), depth):
        start, end = spans[index]
        out.append(text[last:start])
        out.append(_requote(text[start:end], new))
        last, changed = end, True
    if not changed:
        return text
    out.append(text[last:])
    return "".join(out)


def _gate_starts(text: str) -> list[int]:
    """Where _SCRUB_GATE's matches start in `text` (str offsets)."""
    data = text.encode("utf-8", "surrogatepass")
    starts = [match.start() for match in _SCRUB_GATE.finditer(data)]
    if starts and not text.isascii():  # a match starts at an ASCII character: a boundary
        starts = [len(data[:at].decode("utf-8", "surrogatepass")) for at in starts]
    return starts


def _words_at(spans: list[tuple[int, int]], starts: list[int]) -> list[int]:
    """The indexes of the words in which a match starts (both lists ascending)."""
    marked: list[int] = []
    word = 0
    for at in starts:
        while word < len(spans) and spans[word][1] <= at:
            word += 1
        if word == len(spans):
            break
        if spans[word][0] <= at and (not marked or marked[-1] != word):
            marked.append(word)
    return marked


def _scrub_marked(
    text: str, spans: list[tuple[int, int]], marked: list[int], depth: int
) -> list[tuple[int, str]]:
    """`scrub_words` over the marked words and the values they announce: the words that
    change, with their new text. An unmarked word that is no value stays as it is, and
    announces nothing (every flag, header or name that does is matched by the gate)."""
    changed: list[tuple[int, str]] = []
    chosen, index = set(marked), 0
    for first in marked:
        if first < index:
            continue  # read already, as a value announced before it
        index, expect = first, None
        while index < len(spans) and (expect is not None or index in chosen):
            start, end = spans[index]
            word = _unquote(text[start:end])
            new = _scrub_value(word, expect, depth) if expect else _scrub_word(word, depth)
            if new != word:
                changed.append((index, new))
            expect = _expectation(word, expect)
            index += 1
    return changed


def _shell_spans(text: str) -> list[tuple[int, int]]:
    """The spans of `_SHELL_WORD` in `text`, as `finditer` gives them, in linear time: after
    the first `"` that no word took (a quote left open), `_WORD_WITHOUT_QUOTES` reads on."""
    spans: list[tuple[int, int]] = []
    pattern, pos = _SHELL_WORD, 0
    while (match := pattern.search(text, pos)) is not None:
        if pattern is _SHELL_WORD and '"' in text[pos : match.start()]:
            pattern = _WORD_WITHOUT_QUOTES  # this match is right: the open quote came first
        spans.append(match.span())
        pos = match.end()
    return spans


def _unquote(word: str) -> str:
    return _QUOTED.sub(lambda m: m.group(1) or m.group(2) or "", word)


def _requote(original: str, new: str) -> str:
    quote = original[0]
    if quote in "'\"" and original.endswith(quote) and len(original) > 1:
        return f"{quote}{new}{quote}"
    return new


# ---------------------------------------------------------------- lines that are no message

_KEY = re.compile(r"""["']?(?<![\w.-])([A-Za-z_][\w.-]*)["']?[ \t]*[:=]""")
_COARSE = re.compile(
    r"token|secret|passw|cookie|credential|auth|key|bearer|signature|://|mcpservers|_meta"
    r'|"(?:value|env|headers|args|url|baseurl)"',
    re.I,
)
PRECISE_LIMIT = 1 << 16  # longer fragments get the coarse check only


def fragment_may_hold_secret(text: str) -> str | None:
    """Why a line that is not a JSON-RPC message may hold a secret, or None when it cannot.

    It may when it starts with `"` (a key or an element of a pretty-printed message), when it
    has a key (`name:` or `name=`, quoted or not) named as a credential or as a key that holds
    secrets (`value`, `env`, `headers`, ...), or when scrubbing it as a command line changes it
    (a credential flag, an `Authorization:` header, a URL with credentials). Lines longer than
    PRECISE_LIMIT are checked coarsely: any credential word or `://` at all.
    """
    stripped = text.lstrip()
    if stripped.startswith('"'):
        return "it starts like a key or a string of a pretty-printed message"
    if len(text) > PRECISE_LIMIT:
        return "a long line with a credential word in it" if _COARSE.search(text) else None
    for match in _KEY.finditer(text):
        name = match.group(1)
        if name.lower() in FRAGMENT_KEYS or names_credential(name):
            return f"it has a key that may hold a secret ({name if _is_fixed(name) else 'a credential name'})"
    if scrub_text(text) != text:
        return "it has a credential flag, header or URL"
    return None


def _is_fixed(name: str) -> bool:
    """A key name from our own vocabulary, safe to quote in a note."""
    return name.lower() in FRAGMENT_KEYS
