"""The writer process of the tap: forking it, waiting for it, and its watchdog.

- The writer process is forked from the tap right after the agent started, while the tap has
  no other thread. It keeps the ring, the trace, a wake-up pipe and the read end of a
  lifeline pipe whose write end only the tap holds; it ignores SIGINT, SIGTERM and SIGHUP
  (the tap decides when the recording ends) and SIGXFSZ (a file size limit fails a write). It
  runs at the tap's priority (WRITER_NICE): a writer niced below the traffic was starved on a
  busy machine (load 10 on 2 cores: a few percent of a core), so the tap waited minutes for it
  at the end; the queue absorbs bursts, and a full queue drops records and counts them. A
  watchdog thread in it reads the lifeline: when the tap dies before it reaped the agent, the
  watchdog ends the agent's process group (SIGTERM, then SIGKILL after the grace period: the
  agent's children too), records that, and gives the writer the grace period to finish.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from importlib import import_module

from acp_trace.record.options import RecordOptions
from acp_trace.record.ring import AGENT_REAPED, TAKEN, WRITER_DONE, WRITTEN, Ring
from acp_trace.record.trace_file import TraceTarget

HURRIED_FINISH = 3.0  # seconds the tap waits at most for its writer once told to hurry
WRITER_NICE = 0  # the tap's own: niced, the writer starved on a busy machine (issue 26)
IMPORT_NICE = 5  # the writer's imports, while the agent starts: a little below the agent
MEANWHILE = 0.002  # seconds between the writer's looks at the ring while it imports


class WriterProcess:
    """The tap's handle on its writer process."""

    def __init__(
        self,
        pid: int,
        ring: Ring,
        wake_fd: int,
        lifeline_fd: int,
        trace_fd: int | None = None,
        backlog_fd: int | None = None,
    ) -> None:
        self.pid, self.ring, self.wake_fd, self.lifeline_fd = pid, ring, wake_fd, lifeline_fd
        self.trace_fd = trace_fd  # the tap's copy of a regular trace (tail.py finishes it)
        self.backlog_fd = backlog_fd  # the writer's backlog (backlog.py), which tail.py counts
        self.status: int | None = None

    def running(self) -> bool:
        if self.status is None:
            with suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid == 0:
                    return True
                self.status = status
            self.status = 0 if self.status is None else self.status
        return False

    def wait(
        self, stall: float, hurry: Callable[[], bool], step: Callable[[], object] = lambda: None
    ) -> bool:
        """Wait for the writer to finish for as long as it makes progress (takes frames,
        writes records, runs or waits for a CPU: a starved writer is slow, not stalled),
        giving up after `stall` seconds without any (one second, and three in all, once
        `hurry()`); `step()` is called at each look. True when it finished, False when it
        had to be stopped."""
        start = since = time.monotonic()
        progress = self._progress()
        while self.running():
            step()
            now = time.monotonic()
            if (current := self._progress()) != progress or _runnable(self.pid):
                progress, since = current, now
            quick = hurry()
            if now - since > (min(stall, 1.0) if quick else stall) or (
                quick and now - start > HURRIED_FINISH
            ):
                self.kill()
                return False
            time.sleep(0.01)
        return True

    def kill(self) -> None:
        with suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.status = -signal.SIGKILL

    def close(self) -> None:
        for fd in (self.wake_fd, self.lifeline_fd, self.trace_fd, self.backlog_fd):
            if fd is not None:
                with suppress(OSError):
                    os.close(fd)
        self.trace_fd = self.backlog_fd = None

    def _progress(self) -> tuple[int, int, int]:
        return self.ring.ctl[TAKEN], self.ring.ctl[WRITTEN], _scheduled_ns(self.pid)


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _scheduled_ns(pid: int) -> int:
    """Nanoseconds the process's threads ran and waited on a run queue (Linux schedstat;
    0 elsewhere): it grows while the writer works or waits for a CPU, not while it is
    stopped or blocked on a trace that takes nothing."""
    total = 0
    for task in _tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as stat:
                ran, waited, *_ = stat.read().split()
            total += int(ran) + int(waited)
        except (OSError, ValueError):
            continue
    return total


def _runnable(pid: int) -> bool:
    """Whether a thread of the process is running or waiting for a CPU right now (state R)."""
    for task in _tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"R":
                    return True
        except (OSError, IndexError):
            continue
    return False


WriterMain = Callable[[Ring, TraceTarget, int, "Watchdog", "tuple[int, int] | None"], None]


def start_writer(
    ring: Ring,
    target: TraceTarget,
    agent: subprocess.Popen[bytes],
    options: RecordOptions,
    main: WriterMain,
    backlog_bytes: int = 0,
) -> WriterProcess:
    """Fork the writer process; it runs `main(ring, target, wake_fd, watchdog, backlog)` and
    exits. `backlog` is the (fd, capacity) of a backlog of `backlog_bytes` (backlog.py), made
    here so that the tap can count what it holds; None when there is none."""
    fd = create_backlog() if backlog_bytes > 0 else None
    backlog = None if fd is None else (fd, backlog_bytes)
    wake_r, wake_w = os.pipe()
    life_r, life_w = os.pipe()
    os.set_blocking(wake_w, False)
    tap_fds = [
        wake_w,
        life_w,
        *(f.fileno() for f in (agent.stdin, agent.stdout, agent.stderr) if f),
    ]
    pid = os.fork()
    if pid == 0:  # the writer process: never returns
        code = 1
        try:
            _become_writer(tap_fds)
            watchdog = Watchdog(life_r, ring, agent.pid, options.grace)
            main(ring, target, wake_r, watchdog, backlog)
            code = 0
        except BaseException:
            with suppress(BaseException):
                import traceback

                failure = traceback.format_exc()
                os.write(2, f"acp-trace: the trace writer failed:\n{failure}".encode())
        finally:
            ring.ctl[WRITER_DONE] = 1
            os._exit(code)
    os.close(wake_r)
    os.close(life_r)
    trace_fd = None
    if target.fd is not None:  # a regular trace stays open here, for tail.py
        if stat.S_ISREG(os.fstat(target.fd).st_mode):
            trace_fd = target.fd
        else:
            os.close(target.fd)
        target.fd = None
    return WriterProcess(pid, ring, wake_w, life_w, trace_fd, backlog[0] if backlog else None)


def create_backlog() -> int | None:
    """A new, empty backlog file for the writer (backlog.py), made by the tap before it forks
    the writer so that it can count what the backlog holds; None where Linux's memfd_create
    is missing (the ring alone then holds what waits)."""
    try:
        return os.memfd_create("acp-trace-backlog", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None


def import_gently(*modules: str, meanwhile: Callable[[], object] | None = None) -> None:
    """Import modules in a thread of a lower priority (Linux nice is per thread), so that
    the agent, starting at the same moment, has the CPU first; the caller waits for it,
    calling `meanwhile()` every few milliseconds (the writer keeps the ring warm with it).
    Not the lowest: at nice 19 a busy machine left the imports a fraction of a percent of a
    core (the trace stayed empty for a minute while the ring filled)."""

    def load() -> None:
        with suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), IMPORT_NICE)
        for module in modules:
            import_module(module)

    thread = threading.Thread(target=load, name="imports")
    switch = sys.getswitchinterval()
    if meanwhile is not None:  # the GIL comes back to the looks within a millisecond
        sys.setswitchinterval(MEANWHILE / 2)
    thread.start()
    while thread.is_alive():
        if meanwhile is not None:
            meanwhile()
        thread.join(MEANWHILE)
    sys.setswitchinterval(switch)


def _become_writer(tap_fds: list[int]) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_IGN)
    for fd in tap_fds:
        with suppress(OSError):
            os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the client must see EOF when the tap closes its stdout
        os.dup2(null, fd)
    os.close(null)
    if WRITER_NICE:
        with suppress(OSError):
            os.nice(WRITER_NICE)


Record = Callable[[str, dict[str, object]], None]


class Watchdog:
    """In the writer process: notices the tap's death and ends the agent it left behind.

    `tap_gone` is set when the tap died (its lifeline closed before the recording was closed),
    `settled` once the agent's process group was dealt with; the writer finishes after that.
    """

    def __init__(self, lifeline: int, ring: Ring, agent_pid: int, grace: float) -> None:
        self._lifeline, self._ring, self._pid, self._grace = lifeline, ring, agent_pid, grace
        self.tap_gone = threading.Event()
        self.settled = threading.Event()

    def start(self, record: Record, finished: threading.Event) -> None:
        """Watch in a thread; `record(event, fields)` adds a tap event to the trace."""
        thread = threading.Thread(target=self._watch, args=(record, finished), daemon=True)
        thread.start()

    def _watch(self, record: Record, finished: threading.Event) -> None:
        while True:
            try:
                if not os.read(self._lifeline, 1):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        if finished.is_set():
            return
        self.tap_gone.set()
        if self._ring.ctl[AGENT_REAPED]:
            message = "the recorder ended before it closed the recording"
            record("error", {"message": message, "cause": "recorder"})
        else:
            message = "the recorder ended before the agent exited; its writer ends the agent"
            record("error", {"message": message, "cause": "recorder"})
            self._end_group(record)
        self.settled.set()
        if not finished.wait(self._grace + 1.0):
            os._exit(1)  # the trace target is stuck: give up, nobody waits for us

    def _end_group(self, record: Record) -> None:
        reason = "the recorder died before the agent exited"
        for signum in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self._pid, signum)
            except OSError:
                return
            record("kill", {"signal": int(signum), "reason": reason})
            deadline = time.monotonic() + self._grace
            while time.monotonic() < deadline:
                try:
                    os.killpg(self._pid, 0)
                except OSError:
                    return
                time.sleep(0.02)
