"""The client limits and deadlines acp-trace knows (rules.md "Replay weight, client limits and
deadlines"): data that ships with the tool, each with who has it and where that is documented.
docs/rules.md's tables are tested against this module (tests/weight/test_known.py)."""

from __future__ import annotations

from typing import NamedTuple


class Known(NamedTuple):
    """A limit (bytes: a line longer than it breaks the client) or a deadline (milliseconds:
    a silence longer than it trips the client), who has it, and where that is documented."""

    value: int  # bytes for a limit, milliseconds for a deadline
    name: str  # short, as messages and charts show it: "16 MiB", "10 s"
    clients: str  # who has it, and what happens there
    source: str  # where that is documented (a URL, or a file and line of a named release)


# A line's length is its bytes without the newline; it passes a limit when longer.
LIMITS: tuple[Known, ...] = (
    Known(64 * 1024, "64 KiB", "Python asyncio's stream reader (its default line limit)", "TODO"),
    Known(4_000_000, "4 MB", "the Java SDK's WebSocket transport (its message size)", "TODO"),
    Known(
        16 * 1024 * 1024,
        "16 MiB",
        "Effect's ndjson (its default: Cursor's resume breaks for good); the TypeScript and Java SDKs' HTTP POST body",
        "TODO",
    ),
    Known(
        64 * 1024 * 1024, "64 MiB", "acpx (its line cap); the TypeScript SDK's HTTP buffer", "TODO"
    ),
)

# A silence passes a deadline when longer.
DEADLINES: tuple[Known, ...] = (
    Known(2_000, "2 s", "a desktop client's load probe", "TODO"),
    Known(5_000, "5 s", "a desktop client's shared load budget", "TODO"),
    Known(10_000, "10 s", "an SDK's default request timeout", "TODO"),
    Known(60_000, "60 s", "the TypeScript SDK's HTTP transport (its output stall limit)", "TODO"),
    Known(120_000, "120 s", "a runtime's inactivity timer (reset only by session/update)", "TODO"),
)
