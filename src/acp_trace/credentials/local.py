"""The rules: gitleaks' (gitleaks.py) and our own, each an RE2 regex with its keywords.

Our own rules find what has no fixed shape but a telling context:

- `authorization`: the value of an `Authorization` / `Proxy-Authorization` header or key
  (`Authorization: Bearer X`, `"Authorization": "X"`, `authorization=X`), scheme kept;
- `bearer-token`: `Bearer X` anywhere, X of 8 or more token characters with a digit (or 24+);
- `basic-auth`: `Basic X` anywhere, X base64 of `user:password`;
- `url-password`: the password in `scheme://user:password@host`;
- `credential-assignment`: the value in `NAME=value` (`export NAME=value`, `NAME="value"`,
  `?api_key=value`) where NAME names a credential (`names_credential`, the rule the recorder
  has always used for keys, flags and variables);
- `private-key`: a private key block with no END (cut short): from BEGIN to the end.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field

import re2  # type: ignore[import-untyped]  # google-re2 ships no types

from acp_trace.credentials.assignment import find_assignments
from acp_trace.credentials.names import (
    CREDENTIAL_PARTS,
    CREDENTIAL_WORDS,
)
from acp_trace.credentials.names import (
    compile_bytes as _compile,
)

Verify = Callable[[bytes, "re2._Match"], bool]
Finder = Callable[[bytes], list[tuple[int, int]]]


@dataclass(frozen=True)
class Rule:
    """One kind of credential: the regex, the keywords that must occur (lowercase), which
    group is the secret (0: the first group if any, else the whole match), a check of the
    candidate, a byte the text must hold, and a function that finds the spans in place of
    the regex (assignment.py says why)."""

    kind: str
    regex: re2._Regexp
    keywords: tuple[str, ...]
    group: int = 0
    verify: Verify | None = field(default=None, compare=False)
    needs: bytes = b""
    finder: Finder | None = field(default=None, compare=False)  # instead of the regex

    def span(self, match: re2._Match) -> tuple[int, int] | None:
        """The secret's span in a match, or None when the check says it is none."""
        group = self.group or (1 if self.regex.groups else 0)
        start, end = match.span(group)
        if start < 0 or end <= start:
            return None
        secret = match.string[start:end]
        if len(secret) > 1 and secret[:1] in (b'"', b"'") and secret[-1:] == secret[:1]:
            start, end, secret = start + 1, end - 1, secret[1:-1]  # a quoted value: inside
            if not secret:
                return None
        if secret.startswith(b"<redacted") or (self.verify and not self.verify(secret, match)):
            return None
        return start, end


_SCHEMES = frozenset({b"bearer", b"basic", b"token", b"digest", b"negotiate", b"apikey"})
_TOKEN_CHARS = rb"[A-Za-z0-9._~+/\-]"


def _value(secret: bytes, _match: re2._Match) -> bool:
    return secret.lower() not in _SCHEMES


def _bearer(secret: bytes, _match: re2._Match) -> bool:
    return len(secret) >= 24 or any(48 <= c <= 57 for c in secret)


def _basic(secret: bytes, _match: re2._Match) -> bool:
    """Base64 of `user:password` (RFC 7617): printable text with a colon."""
    try:
        decoded = base64.b64decode(secret + b"=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and all(32 <= c < 127 or c >= 128 for c in decoded)


_NAME_WORDS = sorted(CREDENTIAL_WORDS | set(CREDENTIAL_PARTS) | {"key"})
BLOCK_START = _compile(rb"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
BLOCK_END = _compile(rb"(?i)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")


def _local() -> list[Rule]:
    header = rb"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    scheme = rb"(?:(?:bearer|basic|token|digest|negotiate|apikey)[ \t]+)?"
    return [
        Rule(
            "authorization",
            _compile(header + scheme + rb"([^\s\"'`,;<>\\]+)"),
            ("authorization",),
            verify=_value,
        ),
        Rule(
            "bearer-token",
            _compile(rb"(?i)\bbearer[ \t]+(" + _TOKEN_CHARS + rb"{8,}=*)"),
            ("bearer",),
            verify=_bearer,
        ),
        Rule(
            "basic-auth",
            _compile(rb"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})"),
            ("basic",),
            verify=_basic,
        ),
        Rule(
            "url-password",
            _compile(rb"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:\"'<>`]*:([^\s/?#\"'<>`]+)@"),
            ("://",),
        ),
        Rule(
            "credential-assignment",
            _compile(
                rb"(?:^|[^A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_.\-]{0,127})="
                rb"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`;&|<>]+)"
            ),
            tuple(_NAME_WORDS),
            group=2,
            needs=b"=",
            finder=find_assignments,
        ),
        Rule(
            "private-key",
            _compile(
                rb"(?is)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----.*?"
                rb"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)"
            ),
            ("-----begin",),
        ),
    ]


# gitleaks' keyword for JWTs is "ey", which most English text has; a JWT's header is
# base64url of `{"` (`eyJ`) or of `{ "` (`eyA`), so those are the keywords here.
_KEYWORDS = {"jwt": ("eyj", "eya")}
# gitleaks ends many rules with a quote, a space, `;`, a `\n` escape or the end of the text;
# in prose a key is as often followed by `.`, `,` or `)`: any character that cannot continue it.
_GITLEAKS_END = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_END = "(?:[^0-9A-Za-z_\\-]|\\\\[nr]|$)"


def rules() -> tuple[Rule, ...]:
    """gitleaks' rules (their ids are the kinds), then ours."""
    from acp_trace.credentials.gitleaks import RULES

    vendored = [
        Rule(
            rule_id,
            _compile(regex.replace(_GITLEAKS_END, _END).encode()),
            _KEYWORDS.get(rule_id, keywords),
            group,
        )
        for rule_id, regex, keywords, group in RULES
    ]
    return (*vendored, *_local())
