"""Starting the agent: its own session, its three stdio piped, dying with the tap.

On Linux the agent gets SIGKILL when the tap dies (prctl PR_SET_PDEATHSIG), so an agent never
outlives a killed tap, whatever signals it ignores; the writer process's watchdog
(writer_process.py) ends its process group as well. This module is on the path from the tap's
start to the agent's, so the signal is set the cheapest way the system has:

- util-linux's `setpriv --pdeathsig KILL -- AGENT...` where it is installed and knows the
  option (util-linux 2.33, 2018): setpriv sets the signal and execs the agent in the same
  process, so the agent keeps its pid, argv and environment. Popen then needs no preexec
  function and starts the child with vfork: about 1 ms, where importing ctypes and forking for
  a preexec function took 7 to 8 ms (issue 34: start-up at most 30 ms over a plain relay).
  setpriv reports a failed exec itself, so the agent's command is looked up first (as execvp
  will, with a script's `#!` interpreter) and a missing or non-executable one is the same
  `cannot start` error as without it.
  The signal is set a millisecond after the agent's process starts, not before: a tap killed
  within that millisecond leaves the agent to the writer's watchdog and to the EOF on its
  stdin.
- otherwise a preexec function calls prctl through ctypes between fork and exec, and ends
  the child at once if the tap died before the signal was set.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Callable

from acp_trace.errors import RecordError
from acp_trace.processes import parent_death_signal

SETPRIV = ("/usr/bin/setpriv", "/bin/setpriv")  # fixed places, not whatever PATH finds first
SETPRIV_OPTION = b"pdeathsig\x00"  # the long option's name in setpriv's getopt table


def spawn_agent(command: list[str], *, launcher: str | None = "") -> subprocess.Popen[bytes]:
    """Start the agent in its own session, all three stdio piped, dying with the tap.
    `launcher` is the setpriv to use ("" finds one, None never uses one)."""
    setpriv = find_setpriv() if launcher == "" else launcher
    argv, preexec = command, None
    if setpriv is not None and command:
        _check_runnable(command[0])
        argv = [setpriv, "--pdeathsig", "KILL", "--", *command]
    else:
        preexec = _die_with_parent()
    pipe = subprocess.PIPE
    try:
        return subprocess.Popen(
            argv,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
            bufsize=0,
            start_new_session=True,
            preexec_fn=preexec,
        )
    except OSError as exc:
        raise RecordError(f"cannot start {command[0]}: {exc.strerror or exc}") from exc


def find_setpriv() -> str | None:
    """util-linux's setpriv if it is installed and has --pdeathsig, else None."""
    for path in SETPRIV:
        try:
            with open(path, "rb") as binary:
                if os.path.basename(os.path.realpath(path)) == "setpriv":  # not busybox
                    return path if SETPRIV_OPTION in binary.read(4 << 20) else None
        except OSError:
            continue
    return None


def _check_runnable(name: str) -> None:
    """RecordError, as Popen's would read, when execvp would find nothing to run for `name`."""
    if "/" in name:
        candidates = [name]
    else:
        folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
        candidates = [os.path.join(folder or ".", name) for folder in folders]
    found = False
    for path in candidates:
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                _check_interpreter(name, path)
                return
            found = True
    code = errno.EACCES if found else errno.ENOENT
    raise RecordError(f"cannot start {name}: {os.strerror(code)}")


def _check_interpreter(name: str, path: str) -> None:
    """RecordError, as Popen's would read, for a script whose `#!` interpreter is missing."""
    try:
        with open(path, "rb") as script:
            head = script.read(256)
    except OSError:
        return  # executable but unreadable: exec decides
    if not head.startswith(b"#!"):
        return
    words = head[2:].split(b"\n", 1)[0].split()
    if words and not os.access(words[0], os.X_OK):
        raise RecordError(f"cannot start {name}: {os.strerror(errno.ENOENT)}")


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
