"""`acp-trace mcp`: a read-only Model Context Protocol server over stdio, so that a coding
agent (Claude Code, Zed, any MCP host) can ask the traces what the CLI would answer.

`store` (the traces, read again when they change), `paging` (every answer bounded, with a
cursor), `answers`, `explain` and `timeline` (the tools' answers, from the library's tables),
`server` (the tools on the official `mcp` SDK). The SDK is an extra:
`pip install -e '.[mcp]'` in the clone. Named `mcpserver` so that it never stands for the SDK's
`mcp` package.
"""

from acp_trace.mcpserver.nowrite import matplotlib_writing_nothing

matplotlib_writing_nothing()  # before any module here imports the charts
