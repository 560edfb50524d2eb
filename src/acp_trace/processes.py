"""Processes that must not outlive the one that started them: Linux's parent-death signal.

The tap's agent and the analyzer's pool workers both ask the kernel to send them SIGKILL when
their parent dies (prctl PR_SET_PDEATHSIG). This module imports nothing heavy: the tap
loads it on its way to starting the agent.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def parent_death_signal() -> Callable[[], None] | None:
    """A function that makes the process calling it get SIGKILL when its parent dies; None
    where there is none (not Linux, no prctl). The system call is looked up here, so the
    function only calls it: it may run between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None

    def set_parent_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return set_parent_death_signal
