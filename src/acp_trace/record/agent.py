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
from collections.abc import Callable

from acp_trace.errors import RecordError
from acp_trace.processes import parent_death_signal


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
    set_signal = parent_death_signal()
    if set_signal is None:
        return None
    parent = os.getpid()

    def set_pdeathsig() -> None:
        set_signal()
        if os.getppid() != parent:  # the tap died before the signal was set
            os.kill(os.getpid(), signal.SIGKILL)

    return set_pdeathsig
