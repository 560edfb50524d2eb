"""Starting the agent: its own session, its three stdio piped, dying with the tap.

On Linux the agent gets SIGKILL when the tap dies (prctl PR_SET_PDEATHSIG, set in the child
before exec, through ctypes), so an agent never outlives a killed tap, whatever signals it
ignores; the writer process's watchdog (writer_process.py) ends its process group as well.
This module is on the path from the tap's start to the agent's: it imports little.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable

from acp_trace.errors import RecordError

PR_SET_PDEATHSIG = 1


def spawn_agent(command: list[str]) -> subprocess.Popen[bytes]:
    """Start the agent in its own session, all three stdio piped, dying with the tap."""
    pipe = subprocess.PIPE
    try:
        return subprocess.Popen(
            command,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
            bufsize=0,
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
    except OSError as exc:
        raise RecordError(f"cannot start {command[0]}: {exc.strerror or exc}") from exc


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec function that sets the parent-death signal (Linux only, else None)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_pdeathsig() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the tap died before the signal was set
            os.kill(os.getpid(), signal.SIGKILL)

    return set_pdeathsig
