"""Credentials in free text, replaced in what the mock serves (docs/mock.md): the same
detection the recorder runs (acp_trace.credentials), for traces recorded before it existed
or with `--no-redact-content`. A message has the credentials in its strings replaced and is
written back compactly; a line of text (stray stdout, stderr) has their spans replaced, a
private key printed over several lines replaced up to its END line."""

from __future__ import annotations

from typing import Any

from acp_trace import credentials
from acp_trace.credentials.values import redact_value
from acp_trace.jsonrpc import json_bytes


def message_data(data: bytes, msg: Any) -> bytes | None:
    """A message's line with the credentials in its strings replaced (`msg` is changed in
    place and written back compactly), or None when it holds none."""
    escaped = b"\\u" in data or b"\\/" in data
    if (escaped or credentials.may_hold(data)) and _redacted(msg):
        return json_bytes(msg)
    return None


class Lines:
    """Lines of text (stray stdout, stderr) per stream: credentials' spans replaced, a
    private key printed over several lines up to its END line."""

    def __init__(self) -> None:
        self._states: dict[str, credentials.LineState] = {}

    def text(self, src: str, data: bytes) -> bytes | None:
        """The line with its credentials replaced, or None when it holds none."""
        state = self._states.setdefault(src, credentials.LineState())
        redacted, found = state.redact(data)
        return redacted if found else None


def _redacted(msg: object) -> bool:
    try:
        return bool(redact_value(msg))
    except ValueError:  # a key that held a credential equals another: serve no such key
        return True
