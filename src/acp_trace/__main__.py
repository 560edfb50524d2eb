"""`python -m acp_trace` runs the CLI."""

from acp_trace.cli import main

main()
