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
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import re2  # type: ignore[import-untyped]  # google-re2 ships no types

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


def names_credential(name: str) -> bool:
    """True when `name` says its value is a credential (see the rule above)."""
    words = [word.lower() for word in _WORD.findall(name)]
    flat = "".join(words)
    return (
        flat.endswith("key")
        or any(word in CREDENTIAL_WORDS for word in words)
        or any(part in flat for part in CREDENTIAL_PARTS)
    )


Verify = Callable[[bytes, "re2._Match"], bool]


@dataclass(frozen=True)
class Rule:
    """One kind of credential: the regex, the keywords that must occur (lowercase), which
    group is the secret (0: the first group if any, else the whole match), a check of the
    candidate, and a byte the text must hold."""

    kind: str
    regex: re2._Regexp
    keywords: tuple[str, ...]
    group: int = 0
    verify: Verify | None = field(default=None, compare=False)
    needs: bytes = b""

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


def _assignment(_secret: bytes, match: re2._Match) -> bool:
    name = match.group(1)
    return names_credential(name.decode("latin-1")) and match.group(2) not in (b'""', b"''")


def _compile(pattern: bytes) -> re2._Regexp:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # bytes in, byte offsets out
    options.max_mem = 64 << 20
    return re2.compile(pattern, options)


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
            verify=_assignment,
            needs=b"=",
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
