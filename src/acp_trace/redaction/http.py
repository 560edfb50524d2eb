"""HTTP headers and request targets in the recorded copy of a remote recording
(docs/trace-format.md, "Remote recordings"): the same rules as a command line's, for the
names and values HTTP carries.

- `Authorization` / `Proxy-Authorization`: the scheme kept, the credential replaced
  (`Bearer <redacted>`);
- `Cookie` / `Set-Cookie`: every cookie's value replaced, its name and attributes kept
  (`sid=<redacted>; Path=/`);
- a header whose name names a credential (`X-Api-Key`, `Acp-Token`): its value replaced;
- any other value: a URL's password and credential parameters (`scrub_url`), then
  credentials in free text (`<redacted:KIND>`, acp_trace.credentials) unless `content` is off;
- a request target (`/acp?token=X`): its credential query parameters replaced;
- an error response's body (`{"error": "..."}`, no JSON-RPC message): credentials in free text.

A header is never dropped: its name stays, so a reader sees that it was sent.
"""

from __future__ import annotations

from acp_trace.credentials import names_credential, redact_str
from acp_trace.redaction.secrets import REDACTED, scrub_url

__all__ = ["scrub_body", "scrub_header", "scrub_headers", "scrub_target"]

_AUTHORIZATION = frozenset({"authorization", "proxy-authorization"})
_COOKIES = frozenset({"cookie", "set-cookie"})


def scrub_target(target: str) -> str:
    """A request target (`/path?query`) or URL with its credential parameters replaced."""
    if "://" in target:
        return scrub_url(target)
    return scrub_url("x://h" + target)[len("x://h") :] if target.startswith("/") else target


def scrub_header(name: str, value: str, *, content: bool = True) -> str:
    """One header's value as it is recorded (see the module's docstring)."""
    lower = name.lower()
    if lower in _AUTHORIZATION:
        scheme, space, rest = value.strip().partition(" ")
        return f"{scheme} {REDACTED}" if space and rest else REDACTED
    if lower in _COOKIES:
        return _cookies(value, setting=lower == "set-cookie")
    if names_credential(lower.replace("-", "_")):
        return REDACTED
    scrubbed = scrub_url(value) if "://" in value else value
    if content:
        scrubbed, _kinds = redact_str(scrubbed)
    return scrubbed


def scrub_body(text: str, *, content: bool = True) -> str:
    """The start of an error response's body (it is no JSON-RPC message): credentials in
    free text replaced unless `content` is off."""
    return redact_str(text)[0] if content else text


def scrub_headers(pairs: list[tuple[str, str]], *, content: bool = True) -> list[list[str]]:
    """Headers in the order sent, each `[name, recorded value]` (a name may repeat)."""
    return [[name, scrub_header(name, value, content=content)] for name, value in pairs]


def _cookies(value: str, *, setting: bool) -> str:
    """`a=1; b=2` with the values replaced; for Set-Cookie only the first pair is the cookie
    (the rest are its attributes: Path, Expires, ...)."""
    parts = value.split(";")
    out = []
    for i, part in enumerate(parts):
        name, equals, _val = part.partition("=")
        if equals and (i == 0 or not setting):
            out.append(f"{name}={REDACTED}")
        else:
            out.append(part)
    return ";".join(out)
