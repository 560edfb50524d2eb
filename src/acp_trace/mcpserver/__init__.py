"""`acp-trace mcp`: a read-only Model Context Protocol server over stdio, so that a coding
agent (Claude Code, Zed, any MCP host) can ask the traces what the CLI would answer.

`served` (the files it may read), `store` (the traces, each file read again when it changes,
redacted as export does), `paging` (every answer bounded, with a cursor), `answers`, `explain`,
`timeline` and `charts` (the tools' answers, from the library's tables), `nowrite`
(matplotlib writing nothing), `server`, `refusals` and `transport` (the tools on the official `mcp` SDK).
The promise they keep: docs/mcp.md. The SDK is an extra:
`pip install -e '.[mcp]'` in the clone. Named `mcpserver` so that it never stands for the SDK's
`mcp` package.
"""

from acp_trace.mcpserver.nowrite import matplotlib_writing_nothing

matplotlib_writing_nothing()  # before any module here imports the charts
