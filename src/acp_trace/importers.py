"""Converters from other ACP capture formats into trace format v1 lines (see docs/importing.md)."""

from __future__ import annotations

from pathlib import Path

from acp_trace.errors import InputError


def convert(path: Path, data: bytes, fmt: str | None = None) -> list[tuple[str, list[bytes]]]:
    """Convert a capture in another format into [(trace name, v1 lines)], one per connection.

    `fmt` names the format; None detects it from the content.
    """
    raise InputError(f"{path}: not an acp-trace v1 trace (line 1 is not a header)")
