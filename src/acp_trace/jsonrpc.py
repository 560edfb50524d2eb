"""JSON-RPC 2.0 and ACP vocabulary: message kinds, ids, update kinds, directions."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
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
# claude-agent-acp's end-of-replay event (protocol-notes.md): the `_meta` a client puts in its
# initialize capabilities to ask for it, and the `_meta` of the session_info_update it sends.
AIR_PATH = "jetbrains.air.loadReplayEnd"
AIR_CAPABILITY = "loadReplayEnd"
AIR_CLIENT_META = {"jetbrains": {"air": {"version": 1, "capabilities": [AIR_CAPABILITY]}}}
AIR_EVENT_META = {"jetbrains": {"air": {"version": 1, "loadReplayEnd": True}}}

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
    """Parse JSON; falls back to the stdlib for what orjson refuses but JSON allows (a lone
    surrogate escape such as `"\\ud83d"`). ValueError for anything that is not JSON, nesting too
    deep to parse included. orjson reads integers beyond 64 bits as floats: where an integer
    must stay exact (a JSON-RPC id), use `loads_exact`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return loads_exact(data)


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON with every integer exact at any size (the stdlib parser; slower than `loads`).
    ValueError for anything that is not JSON, NaN and Infinity and too deep a nesting included."""
    if isinstance(data, bytes | bytearray | memoryview):
        data = bytes(data).decode("utf-8")  # raises UnicodeDecodeError (a ValueError) on bad bytes
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def loads_message(data: bytes | str) -> Any:
    """Parse a JSON-RPC line (a message or a batch) with its ids exact at any size: orjson,
    and the stdlib again (`loads_exact`) when an id or a `$/cancel_request`'s
    `params.requestId` came out a float (an integer beyond 64 bits, which orjson reads as one;
    a client that answered it with the float would never be matched). ValueError as `loads`."""
    value = loads(data)
    return loads_exact(data) if has_float_id(value) else value


def has_float_id(value: Any) -> bool:
    """True when a parsed message (or a batch) holds a float id or `params.requestId`."""
    for msg in value if isinstance(value, list) else [value]:
        if not isinstance(msg, dict):
            continue
        params = msg.get("params")
        request = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(msg.get("id"), float) or isinstance(request, float):
            return True
    return False


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
    """A JSON value if it is a string (see `clean_text`), else None."""
    return clean_text(value) if isinstance(value, str) else None


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` as UTF-8 can hold it: a lone surrogate (`"\\ud83d"` in JSON, what JSON.stringify
    writes for a cut emoji) becomes its escape, the six characters `\\ud83d`. Any other text is
    returned as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def as_int(value: Any) -> int | None:
    """A JSON value if it is an integer that 64 bits hold (not a boolean), else None: what it
    gives goes into Int64 columns (a protocol version, an exit code, a signal, a time)."""
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return value
    return None


def as_dict(value: Any) -> dict[str, Any]:
    """A JSON value if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def is_air_event(update: Any) -> bool:
    """A `params.update` that carries `_meta.jetbrains.air.loadReplayEnd = true`."""
    meta = as_dict(as_dict(update).get("_meta"))
    return as_dict(as_dict(meta.get("jetbrains")).get("air")).get("loadReplayEnd") is True


def air_opted_in(params: Any) -> bool:
    """An initialize request's params advertise `_meta.jetbrains.air` with an integer
    `version` >= 1 and `loadReplayEnd` among its `capabilities`, in `clientCapabilities` (v1)
    or `capabilities` (v2) (claude-agent-acp 0.101.0's `dist/air-extension.js`)."""
    for holder in ("clientCapabilities", "capabilities"):
        caps = as_dict(as_dict(params).get(holder))
        air = as_dict(as_dict(as_dict(caps.get("_meta")).get("jetbrains")).get("air"))
        version = as_int(air.get("version"))
        names = air.get("capabilities")
        if (
            version is not None
            and version >= 1
            and isinstance(names, list)
            and AIR_CAPABILITY in names
        ):
            return True
    return False


def id_key(value: Any) -> str:
    """A canonical text for a JSON-RPC id that keeps its type and value exactly: `1` and `"1"`
    differ, and so do integers beyond 64 bits that differ in their last digit. It is the id's
    JSON text (compact; a lone surrogate escaped), so `id_json` prints it back as written."""
    if type(value) is int:  # not bool; exact at any size
        return str(value)
    return json_text(value)


def cancelled_key(msg: str | bytes | None) -> str | None:
    """The `id_key` of the request a `$/cancel_request` names (`params.requestId`), read with
    every integer exact (an id beyond 64 bits stays itself), or None when it names none."""
    try:
        parsed = loads_exact(msg or "null")
    except ValueError:
        return None
    params = parsed.get("params") if isinstance(parsed, dict) else None
    if not isinstance(params, dict) or "requestId" not in params:
        return None
    return id_key(params["requestId"])


def error_detail(error: Any, limit: int = 200) -> str:
    """An error answer's words for a person: its `message`, then its `data` (where agents such
    as codex-acp and gemini-cli put the reason) as compact JSON, each cut at `limit`
    characters. Escape it for where it is shown."""
    error = as_dict(error)
    message = str(error.get("message", ""))
    text = message if len(message) <= limit else message[: limit - 1] + "…"
    if error.get("data") is not None:
        data = json_text(error["data"])
        text += f" (data: {data if len(data) <= limit else data[: limit - 1] + '…'})"
    return text


def json_text(value: Any) -> str:
    """Compact JSON text of a parsed value (`json_bytes` as text)."""
    return json_bytes(value).decode()


def json_bytes(value: Any, *, indent: bool = False) -> bytes:
    """The one JSON writer for values that may hold text or numbers from a trace: orjson's
    output where orjson can write the value; else the stdlib's, with integers beyond 64 bits
    kept exactly, lone surrogates (which orjson refuses) written as their escape (`\\ud83d`,
    as the reader keeps them) and non-finite floats (a `1e400` the stdlib parser read) as
    `null`, as orjson writes them. Always valid JSON, always UTF-8. `indent`: two spaces and
    a final newline."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError:
        pass
    try:
        text = json.dumps(
            _finite(value),
            ensure_ascii=False,
            allow_nan=False,
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
        )
    except RecursionError:  # nested deeper than the stdlib writes: compact, without recursion
        text = _flat_dumps(value)
    return clean_text(text + "\n" if indent else text).encode()


def _flat_dumps(value: Any) -> str:
    """Compact JSON of any depth, written with an explicit stack (scalars as `json_bytes`)."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]  # (is literal text, item)
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            stack.append((True, "}"))
            for i, (key, member) in reversed(list(enumerate(item.items()))):
                stack.append((False, member))
                name = json.dumps(str(key), ensure_ascii=False)
                stack.append((True, ("," if i else "") + name + ":"))
        elif isinstance(item, list | tuple):
            out.append("[")
            stack.append((True, "]"))
            for i, member in reversed(list(enumerate(item))):
                stack.append((False, member))
                if i:
                    stack.append((True, ","))
        else:
            out.append(json.dumps(_finite(item), ensure_ascii=False, allow_nan=False))
    return "".join(out)


def _finite(value: Any) -> Any:
    """`value` with every non-finite float as None."""
    return _map_leaves(value, lambda x: x if not isinstance(x, float) or math.isfinite(x) else None)


def clean_value(value: Any) -> Any:
    """`value` with every string and key through `clean_text` (a lone surrogate becomes its
    six-character escape), for libraries that take only text UTF-8 can hold (jsonschema-rs)."""
    return _map_leaves(value, lambda x: clean_text(x) if isinstance(x, str) else x, clean_text)


def _map_leaves(
    value: Any, leaf: Callable[[Any], Any], key: Callable[[str], str] | None = None
) -> Any:
    """A copy of a JSON value with `leaf` applied to every scalar and `key` to every object
    key; iterative, since a value the stdlib parsed may be nested deeper than Python's
    recursion limit."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, at = stack.pop()
        item = container[at]
        if isinstance(item, dict):
            container[at] = members = {key(k) if key else k: v for k, v in item.items()}
            stack.extend((members, k) for k in members)
        elif isinstance(item, list | tuple):
            container[at] = items = list(item)
            stack.extend((items, i) for i in range(len(items)))
        else:
            container[at] = leaf(item)
    return root[0]


def id_json(key: str) -> orjson.Fragment:
    """An id's canonical text (`id_key`) as a JSON value for orjson output, printed as it is:
    `123456789012345678901234567890` stays an exact integer, `"1"` a string."""
    return orjson.Fragment(key)


def other_side(src: str) -> str:
    """The peer of a sender: responses from one side answer requests of the other."""
    return "agent" if src == "client" else "client"


def agent_name(result: dict[str, Any], command: Any) -> str | None:
    """A connection's agent name, as every command gives it: the name the agent gives in its
    initialize result (`info`, v2; `agentInfo`, v1), else one from the header's `command`
    (`agent_name_from_command`); None when neither says."""
    name = as_dict(result.get("info") or result.get("agentInfo")).get("name")
    words = command if isinstance(command, list) else []
    if name is None and words and all(isinstance(word, str) for word in words):
        name = agent_name_from_command(words)
    return as_str(name)


def agent_name_from_command(command: list[str]) -> str:
    """A short agent name from its argv: the script for `node x.js`, else the program's name."""
    words = [PurePath(w).name for w in command]
    interpreters = {"node", "python", "python3", "npx", "uvx", "bun", "deno", "env"}
    for word in words:
        if word not in interpreters and not word.startswith("-") and "=" not in word:
            return word.removesuffix(".js").removesuffix(".py")
    return words[0]
