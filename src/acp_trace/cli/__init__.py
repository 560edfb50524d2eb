"""The command line: parse options, call one library function, render. Only this package
imports typer. Each module registers its commands on `app`, in the order `--help` lists them:
record and mock (the two an editor starts); the analysis commands; diff; the commands that
write files; import; the demo.

`main` gives `acp-trace record ... -- AGENT` a fast path (record_fast.py) that loads neither
typer nor a command module: an editor that starts an agent per thread waits for the agent,
not for the tool. Anything the fast path does not take (help, a mistake, another command)
goes to the typer app, loaded here on first use (`from acp_trace.cli import app` too).
"""

from __future__ import annotations

import sys
from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

COMMAND_MODULES = (
    "record",
    "mock",
    "bridge",
    "analysis",
    "fidelity",
    "diff",
    "drive",
    "output",
    "importing",
    "mcp_server",
    "demo",
    "watch",
)  # the --help order


def main() -> None:
    """Entry point: run the command line; acp-trace errors become one line and exit 2."""
    from acp_trace.cli import record_fast

    record_fast.run_if_plain(sys.argv[1:])  # returns only when it leaves the line to typer
    _load()
    from acp_trace.cli.app import main as run_app

    run_app()


def _load() -> Any:
    """Import the typer app and register every command on it; the app."""
    from acp_trace.cli.app import app

    for name in COMMAND_MODULES:
        globals()[name] = import_module(f"acp_trace.cli.{name}")
    globals()["app"] = app  # the Typer object, not the submodule of the same name
    return app


def __getattr__(name: str) -> Any:
    """`app` and the command modules, loaded on first use (PEP 562)."""
    if name == "app" or name in COMMAND_MODULES:
        _load()
        return globals()[name]
    raise AttributeError(f"module 'acp_trace.cli' has no attribute {name!r}")


__all__ = [
    "analysis",
    "app",
    "demo",
    "diff",
    "drive",
    "importing",
    "main",
    "mock",
    "output",
    "record",
]
