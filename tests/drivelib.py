"""Helpers for the drive and pytest-plugin tests: demo-agent commands, demo-client recordings."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from acp_trace.demo.client import ClientOptions, run_client
from testpaths import ROOT


def demo_agent(*args: str) -> list[str]:
    """`acp-trace demo-agent ARGS` run by this interpreter."""
    return [sys.executable, "-m", "acp_trace", "demo-agent", *args]


def record(path: Path, agent: list[str], **client: object) -> Path:
    """Record demo-client (`client` its ClientOptions) against `agent` through the tap."""
    tap = [sys.executable, "-m", "acp_trace", "record", "-o", str(path), "--", *agent]
    result = run_client(ClientOptions(command=tuple(tap), **client))  # type: ignore[arg-type]
    assert result.finished, result.problem
    return path


def readme_example() -> str:
    """The complete test file of the README's "Testing your agent"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Testing your agent") :]
    found = re.search(r"```python\n(# test_my_agent\.py.*?)```", section, flags=re.S)
    assert found, "README: no test_my_agent.py example under Testing your agent"
    return found.group(1)


# Never answers; outlives its stdin, so only the tap's grace (TERM, then KILL) ends it.
HANG = """
import os, sys, time
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
for line in sys.stdin:
    pass
time.sleep(600)
"""


def wait_for(found: Callable[[], object], what: str) -> None:
    """Wait (generously: a busy machine) until `found()` is true."""
    for _ in range(1200):
        if found():
            return
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


def running(pid: int) -> bool:
    """True while process `pid` runs (a zombie has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status  # a zombie has ended


BIG = 2**64
# An agent that asks the client something with an id beyond 64 bits before it answers
# initialize, and answers it only once the client's answer names that very id (any other
# request gets an error at once).
BIG_ID_AGENT = f"""
import json, sys
BIG = {BIG} + 7
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        init = msg["id"]
        send({{"jsonrpc": "2.0", "id": BIG, "method": "fs/read_text_file",
              "params": {{"sessionId": "s", "path": "/x"}}}})
    elif "method" not in msg and msg.get("id") == BIG:
        send({{"jsonrpc": "2.0", "id": init, "result": {{"protocolVersion": 2}}}})
    elif "id" in msg:
        send({{"jsonrpc": "2.0", "id": msg["id"], "error": {{"code": -32601, "message": "no"}}}})
"""
