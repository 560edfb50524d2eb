"""The redaction policy as data: what the trace header's `redaction` says and what the table
in docs/trace-format.md ("Redaction") lists, one `Rule` per row (tests keep them equal).

A path ending in `(credentials)` names a string of which only the credential parts are
replaced (see secrets.py); any other path names a value replaced whole by `<redacted>`.
The rules go by shape: `params.mcpServers` is redacted in any request or notification,
`result.authMethods` in any response, and so on; `methods` says where the schemas put them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_trace import credentials
from acp_trace.redaction.secrets import (
    CREDENTIAL_PARTS,
    CREDENTIAL_WORDS,
    REDACTED,
    URL_PARAMETERS,
)

# 3: credentials in free text (acp_trace.credentials), `content` in the header
# 4: a header's or variable's `_meta` redacted as its value; `NAME value` phrases on stderr
POLICY_ID = "acp-secrets/4"
CONTENT_PLACEHOLDER = "<redacted:KIND>"
PLACEHOLDER = "<redacted: N bytes>"


@dataclass(frozen=True)
class Rule:
    """Secrets of one kind: where (methods, who sends them, request or response), which
    JSON paths, what stays, and why they are secrets."""

    methods: tuple[str, ...]
    sender: str  # client, agent or both
    message: str  # request (notifications alike) or response
    paths: tuple[str, ...]
    why: str
    keep: tuple[str, ...] = ()


_SESSIONS = ("session/new", "session/load", "session/resume", "session/fork")
RULES = (
    Rule(
        _SESSIONS,
        "client",
        "request",
        (
            "params.mcpServers[].env[].value",
            "params.mcpServers[].env[]._meta.**",
            "params.mcpServers[].headers[].value",
            "params.mcpServers[].headers[]._meta.**",
            "params.mcpServers[].args[] (credentials)",
            "params.mcpServers[].url (credentials)",
            "params.mcpServers[].<credential-named key>",
        ),
        "MCP servers of every transport: stdio env and args, http/sse headers and URL",
    ),
    Rule(
        ("providers/set",),
        "client",
        "request",
        ("params.headers.*", "params.baseUrl (credentials)"),
        "the LLM provider's API key, in headers or in its base URL",
    ),
    Rule(
        ("providers/list",),
        "agent",
        "response",
        ("result.providers[].current.baseUrl (credentials)",),
        "the provider's base URL as the agent reports it",
    ),
    Rule(
        ("initialize", "proxy/initialize"),
        "agent",
        "response",
        (
            "result.authMethods[].env[].value",
            "result.authMethods[].env[]._meta.**",
            "result.authMethods[].env.*",
            "result.authMethods[].args[] (credentials)",
            "result.authMethods[].<credential-named key>",
        ),
        "terminal auth methods: the environment (v2 list, v1 object) and arguments to run",
    ),
    Rule(
        ("authenticate", "auth/*"),
        "both",
        "request",
        ("params.*",),
        "credentials given to the agent's login, and whatever vendors add there",
        ("methodId",),
    ),
    Rule(
        ("terminal/create",),
        "agent",
        "request",
        ("params.env[].value", "params.env[]._meta.**", "params.args[] (credentials)"),
        "v1: the environment and arguments of a command the agent runs in the client",
    ),
    Rule(
        ("elicitation/create",),
        "agent",
        "request",
        ("params.url (credentials)",),
        "URL mode: tokens in the URL the user is sent to",
    ),
    Rule(
        ("elicitation/create",),
        "client",
        "response",
        ("result.content.*", "result.*"),
        "form mode: the user's answers (passwords, keys); paired by id, and by shape"
        " (result.action) when the request was not seen",
        ("action", "_meta"),
    ),
    Rule(
        ("*",),
        "both",
        "any",
        (
            "**._meta.<credential-named key>",
            "**._meta.env, headers, args",
            "**._meta.<string> (credentials)",
        ),
        "vendor extensions may carry credentials in `_meta`, at any depth",
    ),
)
HEADER_PATHS = ("command[] (credentials)",)


def policy_header(enabled: bool, stderr_patterns: int, *, content: bool = True) -> dict[str, Any]:
    """The header's `redaction`: the policy, or `{"policy": "none"}` with --no-redact;
    `content` says what is found in free text, or false with --no-redact-content."""
    extra = {"stderr_patterns": stderr_patterns} if stderr_patterns else {}
    if not enabled:
        return {"policy": "none", **extra}
    return {
        "policy": POLICY_ID,
        "replacement": REDACTED,
        "placeholder": PLACEHOLDER,
        "rules": [_rule(rule) for rule in RULES],
        "header": list(HEADER_PATHS),
        "credential_names": {
            "words": sorted(CREDENTIAL_WORDS),
            "parts": list(CREDENTIAL_PARTS),
            "suffix": "key",
            "url_parameters": sorted(URL_PARAMETERS),
        },
        "content": content_header() if content else False,
        **extra,
    }


def content_header() -> dict[str, Any]:
    """The header's `redaction.content`: the kinds found in free text and their source."""
    return {
        "placeholder": CONTENT_PLACEHOLDER,
        "kinds": credentials.kinds(),
        "source": credentials.source(),
    }


def _rule(rule: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {
        "methods": list(rule.methods),
        "sender": rule.sender,
        "message": rule.message,
        "paths": list(rule.paths),
    }
    return out | ({"keep": list(rule.keep)} if rule.keep else {})
