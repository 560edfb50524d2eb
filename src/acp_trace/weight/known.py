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
    Known(
        64 * 1024,
        "64 KiB",
        "Python asyncio's stream reader (its default line limit; the ACP Python SDK's stdio "
        "transport until 0.7)",
        "https://docs.python.org/3/library/asyncio-stream.html (limit: 64 KiB by default); "
        "python/cpython Lib/asyncio/streams.py _DEFAULT_LIMIT = 2 ** 16; "
        "agentclientprotocol/python-sdk src/acp/transports.py:66@0.7.0 (limit=None)",
    ),
    Known(
        4_000_000,
        "4 MB",
        "the Java SDK's WebSocket transport (its largest text message; a longer one fails "
        "the socket)",
        "rules.md's 4 MB; agentclientprotocol/java-sdk acp-websocket-jetty/src/main/java/com/"
        "agentclientprotocol/sdk/agent/transport/WebSocketAcpAgentTransport.java:177@v0.15.0 "
        "setMaxTextMessageSize(4 * 1024 * 1024), 4 MiB: a line between the two is flagged "
        "though that transport takes it",
    ),
    Known(
        16 * 1024 * 1024,
        "16 MiB",
        "Effect's ndjson default (a Cursor resume in t3code breaks for good); the "
        "TypeScript and Java SDKs' HTTP POST body (413)",
        "Effect-TS/effect packages/effect/src/unstable/rpc/RpcSerialization.ts:102"
        "@effect@4.0.0-beta.103 defaultMaxBufferSize = 16 * 1024 * 1024; "
        "https://github.com/pingdotgg/t3code/issues/11216; "
        "agentclientprotocol/typescript-sdk src/node-adapter.ts:12@4356253 "
        "DEFAULT_MAX_REQUEST_BODY_BYTES; agentclientprotocol/java-sdk acp-streamable-http-"
        "jetty/.../StreamableHttpAcpAgentTransportOptions.java@391a4fb "
        "DEFAULT_MAX_POST_BODY_BYTES",
    ),
    Known(
        64 * 1024 * 1024,
        "64 MiB",
        "acpx's line cap (ACP_MESSAGE_TOO_LARGE); the TypeScript SDK's HTTP buffer",
        "openclaw/acpx src/acp/ndjson-stream.ts:6@9998fcb DEFAULT_MAX_ACP_MESSAGE_BYTES = "
        "64 * 1024 * 1024 (since 0.15.1, https://github.com/openclaw/acpx/pull/555); the "
        "TypeScript SDK's 64 MiB HTTP buffer is rules.md's: not found in its source "
        "(src/stream-limits.ts has DEFAULT_MAX_MESSAGE_BYTES, 32 MiB)",
    ),
)

# A silence passes a deadline when longer.
DEADLINES: tuple[Known, ...] = (
    Known(
        2_000,
        "2 s",
        "Paseo's history probe (each session/load)",
        "https://github.com/getpaseo/paseo/pull/4335 ACP_IMPORT_HISTORY_LOAD_TIMEOUT_MS "
        "(2 s as merged 2026-09; 30_000 in later main @0035d13)",
    ),
    Known(
        5_000,
        "5 s",
        "Paseo's shared budget for its session/load probes",
        "https://github.com/getpaseo/paseo/pull/4335 (commit d99b7f2b9) "
        "ACP_IMPORT_HISTORY_BUDGET_MS (5 s as merged; 60_000 in later main @0035d13)",
    ),
    Known(
        10_000,
        "10 s",
        "an SDK's default request timeout (gajae-code's SdkClient: session/new fails)",
        "https://github.com/Yeachan-Heo/gajae-code/issues/4258 (src/sdk/client/client.ts:147 "
        "timeoutMs: 10_000); fixed by PR #4270",
    ),
    Known(
        60_000,
        "60 s",
        "the TypeScript SDK's HTTP transport (its output stall limit)",
        "rules.md's; not found in agentclientprotocol/typescript-sdk "
        "(src/http-stream.ts@1c2bb3c has none); nearest: java-sdk AcpAgent.java:92@v0.15.0 "
        "DEFAULT_REQUEST_TIMEOUT = 60 s, kotlin-sdk Protocol.kt:88@v0.30.0 requestTimeout",
    ),
    Known(
        120_000,
        "120 s",
        "a runtime's inactivity timer, reset only by session/update (dam's API server)",
        "dam-agents/dam packages/api-server/src/core/acp-client.ts:12 TIMEOUT_MS = 120_000; "
        "https://github.com/dam-agents/dam/issues/2122",
    ),
)


def markdown_tables() -> str:
    """The two tables docs/rules.md shows (scripts/known_tables.py prints them there)."""
    out = ["| limit | bytes | who has it | where it is documented |", "|---|---|---|---|"]
    out += [f"| {k.name} | {k.value:,} | {_md(k.clients)} | {_md(k.source)} |" for k in LIMITS]
    out += ["", "| deadline | ms | who has it | where it is documented |", "|---|---|---|---|"]
    out += [f"| {k.name} | {k.value:,} | {_md(k.clients)} | {_md(k.source)} |" for k in DEADLINES]
    return "\n".join(out)


def _md(text: str) -> str:
    """Text for a Markdown table cell: `|`, `*` and `_` as themselves."""
    for c in ("\\", "|", "*", "_"):
        text = text.replace(c, "\\" + c)
    return text
