"""The command line: parse options, call one library function, render. Only this package
imports typer. Each module registers its commands on `app`, in the order `--help` lists them:
record; the analysis commands; the commands that write files; import; the demo."""

from __future__ import annotations

# Importing the command modules registers their commands; the order is the listing's.
# isort: off
from acp_trace.cli.app import app, main
from acp_trace.cli import record, analysis, diff, output, importing, demo

# isort: on

__all__ = ["analysis", "app", "demo", "diff", "importing", "main", "output", "record"]
