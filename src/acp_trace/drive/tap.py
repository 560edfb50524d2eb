"""An agent started behind the tap (`acp-trace record -o TRACE -- AGENT...`) as a process group
of its own, and ended the way an editor ends it: stdin closed, then the tap's grace."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO

from acp_trace.demo.rpc import Endpoint
from acp_trace.errors import RecordError
from acp_trace.quantities import count

LONGEST_WAIT = 86_400  # seconds: a day; a wait or a grace beyond it is a mistake


def seconds_problem(name: str, value: object, *, zero: bool) -> str | None:
    """What is wrong with `value` as a timeout or a grace named `name` (None: nothing): it
    must be a finite number of seconds, above 0 (or 0 too when `zero`), at most a day. Every
    wait ends: infinity is refused, not read as "no timeout"."""
    least = "0 or more" if zero else "above 0"
    expected = f"expected seconds, {least} and at most {count(LONGEST_WAIT)} (a day)"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} {value!r}: {expected}"
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero) or value > LONGEST_WAIT:
        return f"{name} {value:g}: {expected}"
    return None


def tap_command(trace: Path, command: Sequence[str], grace: float) -> list[str]:
    """`acp-trace record -o TRACE --grace G -- AGENT...` run by this interpreter."""
    record = ["record", "-o", str(trace), "--grace", f"{grace:g}", "--", *command]
    return [sys.executable, "-m", "acp_trace", *record]


def spawn(
    argv: list[str],
    env: dict[str, str] | None,
    err: IO[bytes] | int | None,
    cwd: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start `argv` with pipes on stdin and stdout, `err` its stderr, in a new session;
    `env` is added to this process's environment. RecordError when it cannot start."""
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=None if env is None else {**os.environ, **env},
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise RecordError(f"cannot start {argv[0]!r}: {exc.strerror}") from exc


def finish(proc: subprocess.Popen[bytes], rpc: Endpoint, grace: float) -> int:
    """Close the agent's stdin; the tap ends the agent after its grace, then exits itself (if
    it does not, its group gets SIGTERM, then SIGKILL). Returns the tap's exit code."""
    assert proc.stdin is not None and proc.stdout is not None
    with suppress(OSError):
        proc.stdin.close()
    try:
        code = proc.wait(timeout=grace + 30)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
                break
        code = proc.wait()
    rpc.closed.wait(timeout=grace)
    if rpc.closed.is_set():
        proc.stdout.close()
    return code
