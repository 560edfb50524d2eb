"""What the server refuses, and how it says so: arguments refused before a tool runs (one
the tool does not take, text holding a lone surrogate), and every tool error as one line,
`acp-trace: ...`, escaped and cut to ERROR_CHARS characters (saying how many were left out).
"""

from __future__ import annotations

import re
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from acp_trace.errors import AcpTraceError
from acp_trace.quantities import count
from acp_trace.render.escape import terminal


def refused_arguments(name: str, arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Why the arguments are refused before the tool runs: one it does not take, or text
    holding a lone surrogate (no trace holds one, and no JSON encoder can write it back);
    None when neither."""
    known = list(schema.get("properties", {}))
    unknown = [a for a in arguments if a not in known]
    if unknown:
        return (
            f"{name}: unknown argument {', '.join(unknown)}; expected some of: {', '.join(known)}"
        )
    for argument, value in arguments.items():
        if surrogate(value):
            return (
                f"{name}: {argument}: expected text of Unicode characters, got a lone "
                "surrogate (half of a UTF-16 pair)"
            )
    return None


def surrogate(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate in any string."""
    if isinstance(value, str):
        return SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(surrogate(k) or surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(surrogate(v) for v in value)
    return False


SURROGATE = re.compile("[\ud800-\udfff]")
ERROR_CHARS = 1_000  # the most characters of an error line


def tool_message(name: str, exc: ToolError) -> str:
    """One line for a refused call: the tool's own UsageError, or the arguments the schema
    refused (each field, why, and the value given), or an unknown tool."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        parts = []
        for err in cause.errors():
            field = ".".join(str(p) for p in err["loc"]) or "arguments"
            given = "" if err["type"] == "missing" else f", got {err.get('input')!r}"[:80]
            parts.append(f"{field}: {err['msg']}{given}")
        return f"{name}: " + "; ".join(parts)
    if isinstance(cause, AcpTraceError | ToolError):
        return tool_message(name, cause) if isinstance(cause, ToolError) else str(cause)
    return str(cause or exc)


def failure(message: str) -> CallToolResult:
    """A tool error: `acp-trace: MESSAGE` on one line, trace text escaped, cut to
    ERROR_CHARS characters (saying how many were left out)."""
    line = terminal(" ".join(message.split("\n")))
    if len(line) > ERROR_CHARS:
        left = len(line) - ERROR_CHARS
        line = f"{line[:ERROR_CHARS]}… ({count(left)} more characters left out)"
    return CallToolResult(
        content=[TextContent(type="text", text=f"acp-trace: {line}")], is_error=True
    )
