"""The parent-death signal: a process that asks for it gets SIGKILL as its parent's death."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import pytest

from acp_trace.processes import parent_death_signal

PR_GET_PDEATHSIG = 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")
def test_the_function_sets_sigkill_as_the_parent_death_signal() -> None:
    """In a child that calls it, the kernel reports SIGKILL as its parent-death signal; a
    child that does not call it has none."""
    set_signal = parent_death_signal()
    assert set_signal is not None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for calls in (True, False):
        child = os.fork()
        if child == 0:  # pragma: no cover - the child
            if calls:
                set_signal()
            got = ctypes.c_int(-1)
            prctl(PR_GET_PDEATHSIG, ctypes.byref(got), 0, 0, 0)
            os._exit(got.value)
        _pid, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == (signal.SIGKILL if calls else 0)
