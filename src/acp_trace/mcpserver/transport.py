"""The stdio transport's read side, mended: a request whose JSON text holds a lone surrogate
escape (`"\\ud800"`, which JSON allows and Unicode text cannot hold) is refused by the SDK's
parser as invalid JSON, and the request, its id unknown, was never answered: the caller hung.
Here such a line is parsed again by Python's `json` (which keeps the lone surrogate) and
handed on as the request it is, so that the tool refuses the argument with one line
(`refusals.refused_arguments`). Every other message passes through as it came.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError


class Mended:
    """A read stream of the SDK (SessionMessage or Exception items) with `mend` applied."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def last_context(self) -> Any:  # the sender's context, as the SDK reads it
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        return mend(await self.inner.receive())

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> Mended:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Mended:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self.inner.__aexit__(exc_type, exc, tb)
        return result


def mend(item: Any) -> Any:
    """The message a line refused as invalid JSON is, when Python's json reads it (a lone
    surrogate escape); the item unchanged otherwise."""
    if not isinstance(item, ValidationError):
        return item
    errors = item.errors()
    line = errors[0].get("input") if len(errors) == 1 else None
    if errors[0]["type"] != "json_invalid" or not isinstance(line, str):
        return item
    try:
        message = types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False)
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return item
    return SessionMessage(message)
