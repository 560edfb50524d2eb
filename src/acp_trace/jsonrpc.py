"""JSON-RPC 2.0 and ACP vocabulary: message kinds, ids, update kinds, directions."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

import orjson

# session/update kinds (protocol-notes.md). Unknown kinds are neither history nor live.
# History kinds whose v2 replayed form must carry `messageId` (rule message-id-missing).
MESSAGE_KINDS = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_thought",
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
    }
)
HISTORY_KINDS = MESSAGE_KINDS | {
    "tool_call",
    "tool_call_update",
    "tool_call_content_chunk",
    "plan",
    "plan_update",
    "plan_removed",
    "terminal_update",
    "terminal_output_chunk",
    "compaction_update",
    "compaction_summary_chunk",
    "subagent_update",
    "session_message",
    "session_message_chunk",
}
LIVE_KINDS = frozenset(
    {
        "state_update",
        "notice",
        "available_commands_update",
        "config_option_update",
        "usage_update",
        "session_info_update",
        "current_mode_update",
        "prompt_suggestions_update",
    }
)
MARKER_KIND = "replay_complete"
# Agent-to-client requests that should wait until after the marker.
BLOCKING_AGENT_REQUESTS = frozenset({"session/request_permission", "elicitation/create"})
CANCEL_METHOD = "$/cancel_request"
ACCEPTANCE_META_KEY = "executablemd.session-materialization/v1"

# Error codes (protocol-notes.md).
PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800


def update_class(update_kind: str | None) -> str | None:
    """Classify a session/update kind as `history`, `live`, `marker` or `unknown`."""
    if update_kind is None:
        return None
    if update_kind == MARKER_KIND:
        return "marker"
    if update_kind in HISTORY_KINDS:
        return "history"
    if update_kind in LIVE_KINDS:
        return "live"
    return "unknown"


def loads(data: bytes | str) -> Any:
    """Parse JSON; falls back to the stdlib for what orjson refuses but JSON allows (huge ints).

    Every failure is a ValueError, nesting too deep for the stdlib's recursion limit included
    (orjson stops at 1024 levels; a RecursionError is not a bug of the caller's)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if isinstance(data, bytes):
            data = data.decode("utf-8")  # raises UnicodeDecodeError (a ValueError) on bad bytes
        try:
            return json.loads(data, parse_constant=_reject_constant)
        except RecursionError:
            raise ValueError("JSON nested too deeply to parse") from None


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are not JSON: the stdlib accepts them, acp-trace does not."""
    raise ValueError(f"{name} is not JSON")


def is_message(value: Any) -> bool:
    """True for a JSON-RPC 2.0 message: an object with `"jsonrpc": "2.0"` and a method or an id."""
    return (
        isinstance(value, dict)
        and value.get("jsonrpc") == "2.0"
        and ("method" in value or "id" in value)
    )


def message_kind(msg: Any) -> str:
    """`request`, `notification`, `response`, `error`, or `invalid` for anything else."""
    if not is_message(msg):
        return "invalid"
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "error" if "error" in msg else "response"


def as_str(value: Any) -> str | None:
    """A JSON value if it is a string, else None."""
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """A JSON value if it is an integer (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_dict(value: Any) -> dict[str, Any]:
    """A JSON value if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def id_key(value: Any) -> str:
    """A canonical text for a JSON-RPC id that keeps its type: `1` and `"1"` differ."""
    return orjson.dumps(value).decode()


def other_side(src: str) -> str:
    """The peer of a sender: responses from one side answer requests of the other."""
    return "agent" if src == "client" else "client"


def agent_name_from_command(command: list[str]) -> str:
    """A short agent name from its argv: the script for `node x.js`, else the program's name."""
    words = [PurePath(w).name for w in command]
    interpreters = {"node", "python", "python3", "npx", "uvx", "bun", "deno", "env"}
    for word in words:
        if word not in interpreters and not word.startswith("-") and "=" not in word:
            return word.removesuffix(".js").removesuffix(".py")
    return words[0]
