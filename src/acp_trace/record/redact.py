"""Redaction of secrets in the recorded copy of a line (docs/trace-format.md, "Redaction").

The recorder never changes the bytes it forwards; it runs `redact_line` on its writer thread
and records the redacted JSON instead of the original when something was replaced. What is a
secret, by method of the request (JSON-RPC requests and notifications alike, batches element
by element):

- `session/new`, `session/load`, `session/resume`, `session/fork`: the `value` of every entry
  of `params.mcpServers[].env` and `params.mcpServers[].headers` (arrays of `{name, value}`;
  when a server gives them as an object instead, every value of that object);
- `authenticate` (v1) and `auth/login` (v2): every member of `params` except `methodId`,
  `_meta` included, since vendor extensions may carry credentials there.

Every replaced value becomes the string `"<redacted>"` and its JSON path (`$.params...`, or
`$[i].params...` in a batch) is listed in the record's `redacted` key.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from acp_trace.jsonrpc import loads

REDACTED = "<redacted>"
MCP_METHODS = ("session/new", "session/load", "session/resume", "session/fork")
AUTH_METHODS = ("authenticate", "auth/login")
AUTH_KEEP = frozenset({"methodId"})
MCP_SECRET_LISTS = ("env", "headers")

POLICY: dict[str, Any] = {
    "policy": "acp-secrets/1",
    "replacement": REDACTED,
    "rules": [
        {"methods": list(MCP_METHODS), "paths": ["params.mcpServers[].env[].value"]},
        {"methods": list(MCP_METHODS), "paths": ["params.mcpServers[].headers[].value"]},
        {"methods": list(AUTH_METHODS), "paths": ["params.*"], "keep": sorted(AUTH_KEEP)},
    ],
}
NO_POLICY: dict[str, Any] = {"policy": "none"}

_METHOD_BYTES = tuple(m.encode() for m in (*MCP_METHODS, *AUTH_METHODS))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def may_hold_secrets(line: bytes) -> bool:
    """False only when the line surely names none of the redacted methods.

    Without a `\\u` or `\\/` escape a JSON string spells `session/new` literally, so a line
    without those escapes and without any method name as bytes needs no parsing.
    """
    if b"\\u" in line or b"\\/" in line:
        return True
    return any(name in line for name in _METHOD_BYTES)


def redact_value(value: Any) -> list[str]:
    """Redact a parsed line in place (one message or a batch); the JSON paths replaced."""
    if isinstance(value, list):
        paths: list[str] = []
        for index, item in enumerate(value):
            paths.extend(redact_message(item, f"$[{index}]"))
        return paths
    return redact_message(value, "$")


def redact_message(msg: Any, prefix: str = "$") -> list[str]:
    """Redact one JSON-RPC message in place; the JSON paths replaced."""
    if not isinstance(msg, dict):
        return []
    method, params = msg.get("method"), msg.get("params")
    if not isinstance(params, dict):
        return []
    where = f"{prefix}.params"
    if method in MCP_METHODS:
        return _redact_mcp_servers(params.get("mcpServers"), f"{where}.mcpServers")
    if method in AUTH_METHODS:
        return [_replace(params, key, where) for key in list(params) if key not in AUTH_KEEP]
    return []


def redact_line(line: bytes) -> tuple[bytes, list[str]] | None:
    """The redacted JSON text of a line and the paths replaced, or None when nothing was."""
    if not may_hold_secrets(line):
        return None
    text = line.strip(b" \t\r")
    try:
        paths = redact_value(loads(text))
    except ValueError:
        return None
    if not paths:
        return None
    exact = json.loads(text)  # orjson reads integers beyond 64 bits as floats: re-read exactly
    redact_value(exact)
    return dumps(exact), paths


def dumps(value: Any) -> bytes:
    """Compact JSON; the stdlib serializes what orjson refuses (huge integers, lone surrogates)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


def _redact_mcp_servers(servers: Any, where: str) -> list[str]:
    if not isinstance(servers, list):
        return []
    paths: list[str] = []
    for index, server in enumerate(servers):
        if not isinstance(server, dict):
            continue
        for field in MCP_SECRET_LISTS:
            paths.extend(_redact_pairs(server.get(field), f"{where}[{index}].{field}"))
    return paths


def _redact_pairs(pairs: Any, where: str) -> list[str]:
    """`[{name, value}, ...]`: every `value`; `{NAME: value, ...}`: every value."""
    if isinstance(pairs, dict):
        return [_replace(pairs, key, where) for key in list(pairs) if pairs[key] is not None]
    if not isinstance(pairs, list):
        return []
    return [
        _replace(pair, "value", f"{where}[{index}]")
        for index, pair in enumerate(pairs)
        if isinstance(pair, dict) and pair.get("value") is not None
    ]


def _replace(container: dict[str, Any], key: str, where: str) -> str:
    container[key] = REDACTED
    return where + (f".{key}" if _IDENTIFIER.match(key) else f"[{json.dumps(key)}]")
