"""acpx's `--format json` output (npm acpx 0.19.1, src/cli/output/json-formatter.ts).

acpx, an ACP client, prints every JSON-RPC message it sends or receives, one per line
(`JsonOutputFormatter.onAcpMessage`: `JSON.stringify` of the message, without its direction or
a time), so this is bare JSON-RPC: directions are inferred as for `jsonrpc`, and the trace is
ordering-only. acpx also prints lines of its own, which are no message of the wire: a status
object such as `{"action": "session_ensured", "acpxRecordId", ...}` (`sessions new`), and its
error reports, `{"jsonrpc": "2.0", "id": null, "error": {"code", "message", "data": {"acpxCode",
...}}}` (`onError`). They go to the header's `tool_output`, with their line, not into records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_trace.trace.importers import jsonrpc
from acp_trace.trace.importers._common import TraceBuilder

CLIENT_NAME = "acpx"


def is_status(value: Any) -> bool:
    """An acpx status line: an object with `action` and acpx's record or session id."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("action"), str)
        and any(k.startswith("acpx") for k in value)
    )


def is_error_report(value: Any) -> bool:
    """acpx's own error report: an error response with id null whose data has `acpxCode`."""
    if not (isinstance(value, dict) and value.get("jsonrpc") == "2.0" and "id" in value):
        return False
    error = value.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    return value["id"] is None and isinstance(data, dict) and "acpxCode" in data


def is_acpx_initialize(value: Any) -> bool:
    """acpx's initialize request: `params.clientInfo.name` is `acpx`."""
    if not (isinstance(value, dict) and value.get("method") == "initialize"):
        return False
    params = value.get("params")
    info = params.get("clientInfo") if isinstance(params, dict) else None
    return isinstance(info, dict) and info.get("name") == CLIENT_NAME


def is_own(value: Any) -> bool:
    """A line acpx wrote about itself rather than a message of the connection."""
    return is_status(value) or is_error_report(value)


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert acpx's JSON output into one ordering-only trace."""
    return jsonrpc.convert(path, text, name="acpx", own=is_own)
