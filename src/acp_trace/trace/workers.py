"""Worker processes for `--workers`, each on a pipe of its own: a dead worker costs its task only.

A pool whose workers share one queue (multiprocessing.Pool, ProcessPoolExecutor, pebble) does
not survive a worker killed by SIGKILL or the OOM killer well: multiprocessing.Pool waits for
the lost task forever; ProcessPoolExecutor fails every task in flight with BrokenProcessPool
and does not say which task the dead worker held, and when it stops the others with SIGTERM a
forked worker that inherited a handler of SIGTERM may not stop at all (the hang of issue 30);
pebble wedges when the dead worker held the queue's lock (its issue 163). Here the parent
sends each worker one task at a time on the worker's own pipe and waits on every pipe and
every process's sentinel at once (`multiprocessing.connection.wait`), so it sees a death at
once, with the process's exit status and the task it held. That task runs again once, in a
fresh process (the tasks are pure: the result is the one a single process gives); a second
death is a WorkerError that names both processes, how they ended and the task.

Workers ignore SIGINT (Ctrl-C at a terminal reaches the whole process group: the parent
decides) and take SIGTERM and SIGHUP as the default, death; on the way out, whether the run
ended well or not, the parent kills (SIGKILL) whatever still runs and reaps every worker, so
none outlives the command, and Ctrl-C ends it as soon as the parent's wait wakes (POLL).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from acp_trace.errors import WorkerError
from acp_trace.processes import parent_death_signal

POLL = 0.2  # seconds: how often the parent's wait wakes to run a signal's handler
JOIN = 30.0  # seconds: a hang guard only (a killed process is reaped at once)
Outcome = tuple[bool, Any]  # (True, the task's result) or (False, the exception it raised)


@dataclass(eq=False)
class _Worker:
    process: Any  # multiprocessing.process.BaseProcess
    conn: Connection
    task: int | None = None  # the index of the task it holds


class Workers:
    """Up to `count` processes running `fn(task)`; `context()` gives the multiprocessing context
    to start a process with (asked anew for each: a replacement started once threads run in
    this process must not be forked), `init(*args)` runs first in each, `describe(task)` names
    a task for people (the traces it reads)."""

    def __init__(
        self,
        fn: Callable[[Any], Any],
        count: int,
        context: Callable[[], Any],
        *,
        init: Callable[..., None] | None = None,
        args: tuple[Any, ...] = (),
        describe: Callable[[Any], str] = str,
    ) -> None:
        self._fn, self._count, self._context = fn, max(1, count), context
        self._init, self._args, self._describe = init, args, describe
        self._workers: list[_Worker] = []
        self._tasks: dict[int, Any] = {}
        self._queue: deque[int] = deque()
        self._deaths: dict[int, list[tuple[int | None, str]]] = {}
        self._next = 0

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def submit(self, task: Any) -> int:
        """Queue `task`; its index, which `results` gives back with its outcome."""
        index, self._next = self._next, self._next + 1
        self._tasks[index] = task
        self._queue.append(index)
        return index

    def results(self) -> Iterator[tuple[int, Outcome]]:
        """Each submitted task's (index, outcome) as it completes, until none is left (tasks
        submitted meanwhile included)."""
        while self._tasks:
            yield from self.completed()

    def completed(self) -> list[tuple[int, Outcome]]:
        """The (index, outcome) of the tasks that complete within one wait of at most POLL
        seconds (often none). A task whose second process dies too fails with WorkerError."""
        self._dispatch()
        return self._wait()

    def close(self) -> None:
        """Stop every worker: an idle one is told to end, one still at work is killed (the
        run is over: an error, Ctrl-C, SIGTERM); each is reaped."""
        workers, self._workers = self._workers, []
        for worker in workers:
            with suppress(OSError, ValueError):
                if worker.task is None:
                    worker.conn.send(None)
                else:
                    worker.process.kill()
        for worker in workers:
            worker.process.join(JOIN)
            if worker.process.exitcode is None:  # an idle one that did not end: a hang guard
                worker.process.kill()
                worker.process.join(JOIN)
            worker.conn.close()

    # ------------------------------------------------------------ the parent's loop

    def _dispatch(self) -> None:
        """Hand queued tasks to idle workers, starting workers up to `count`."""
        idle = [w for w in self._workers if w.task is None]
        while self._queue and (idle or len(self._workers) < self._count):
            worker = idle.pop() if idle else self._start()
            self._send(worker, self._queue.popleft())

    def _send(self, worker: _Worker, index: int) -> None:
        worker.task = index
        with suppress(OSError):  # it is dead: its sentinel says so in _wait
            worker.conn.send(self._tasks[index])

    def _start(self) -> _Worker:
        context = self._context()
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(
            target=_serve,
            args=(theirs, self._fn, self._init, self._args, workers_parent(context)),
            daemon=True,
            name="acp-trace-worker",
        )
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        try:  # the child starts with these blocked, until it has set what they do
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()
        worker = _Worker(process, ours)
        self._workers.append(worker)
        return worker

    def _wait(self) -> list[tuple[int, Outcome]]:
        """The outcomes that have come (none when the wait timed out); a dead worker's task
        is given to a fresh process, or fails with a WorkerError if it was its second."""
        conns = {w.conn: w for w in self._workers}
        sentinels = {w.process.sentinel: w for w in self._workers}
        ready = wait([*conns, *sentinels], timeout=POLL)
        woken = {conns[r] if r in conns else sentinels[r] for r in ready}
        out: list[tuple[int, Outcome]] = []
        for worker in sorted(woken, key=lambda w: w.process.pid or 0):
            index = worker.task
            try:
                if not worker.conn.poll():  # its sentinel alone: dead, and nothing to say
                    raise EOFError
                outcome: Outcome | None = worker.conn.recv()
            except (EOFError, OSError):  # gone (or gone half way through its answer)
                outcome = self._lost(worker)
            if outcome is None:
                continue
            worker.task = None
            if index is not None:  # (an idle worker says nothing: a hang guard)
                del self._tasks[index]
                out.append((index, outcome))
        return out

    def _lost(self, worker: _Worker) -> Outcome | None:
        """A worker died: reap it; give its task to a new process (and nothing to report),
        or, if it was the task's second, the task's outcome: a WorkerError."""
        self._workers.remove(worker)
        worker.process.kill()  # (a process that broke its pipe but lives on)
        worker.process.join(JOIN)
        worker.conn.close()
        index = worker.task
        if index is None:  # between tasks: nothing lost
            return None
        deaths = self._deaths.setdefault(index, [])
        deaths.append((worker.process.pid, ended(worker.process.exitcode)))
        if len(deaths) == 1:
            self._send(self._start(), index)  # a fresh process, whatever is idle
            return None
        (first, how), (second, again) = deaths[:2]
        return False, WorkerError(
            f"a worker process {first} {how} while reading "
            f"{self._describe(self._tasks[index])}; run again in process {second}, it {again} "
            "too (out of memory? the system log says: dmesg). Try --workers 1, or fewer "
            "traces at once"
        )


def ended(exitcode: int | None) -> str:
    """How a process ended, for people: `was killed by SIGKILL`, `exited with status 1`."""
    if exitcode is None:
        return "ended"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with status {exitcode}"


# ---------------------------------------------------------------- the worker's side

_STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _serve(
    conn: Connection,
    fn: Callable[[Any], Any],
    init: Callable[..., None] | None,
    args: tuple[Any, ...],
    parent: int | None,
) -> None:
    """A worker: SIGINT ignored, SIGTERM and SIGHUP fatal, dead with its parent; then tasks
    until told to end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
    die_with_parent(parent)
    if init is not None:
        init(*args)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if task is None:
            return
        conn.send(_outcome(fn, task))


def _outcome(fn: Callable[[Any], Any], task: Any) -> Outcome:
    try:
        return True, fn(task)
    except Exception as exc:  # the task's own error: the parent decides (retry, raise)
        try:
            pickle.dumps(exc)
        except Exception:
            return False, RuntimeError(f"{type(exc).__name__}: {exc}")
        return False, exc


def die_with_parent(parent: int | None) -> None:
    """This process gets SIGKILL when its parent dies (Linux; `acp_trace.processes`), and
    exits at once if `parent` (when given) is already gone: a worker whose parent was killed
    must not wait for work forever."""
    set_signal = parent_death_signal()
    if set_signal is None:
        return
    set_signal()
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def workers_parent(context: Any) -> int | None:
    """This process's pid when `context` forks the workers from it (a fork server is their
    parent otherwise: it ends when this process does, and takes its workers with it)."""
    return os.getpid() if context.get_start_method() == "fork" else None
