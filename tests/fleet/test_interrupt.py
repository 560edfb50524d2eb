"""Ctrl-C and SIGTERM with --workers end the command at once: the workers are killed, not
waited for (a task under way can take seconds to minutes), and nothing they started finishes."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from sleepy import mark_and_sleep, slow_part

from acp_trace.fleet import run
from acp_trace.trace.pool import worker_context
from acp_trace.trace.workers import Workers
from tracebuilder import TraceBuilder


def _started(folder: Path, count: int) -> list[int]:
    """The pids of the tasks that have started, once `count` have (a hang guard of 120 s)."""
    for _ in range(12000):
        pids = [int(p.name.split("-")[1]) for p in folder.glob("started-*")]
        if len(pids) >= count:
            return pids
        time.sleep(0.01)
    raise AssertionError(f"fewer than {count} tasks started")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_closing_the_workers_kills_those_under_way(tmp_path: Path) -> None:
    """Workers.close (the way out of every run, Ctrl-C's too): the tasks under way never
    finish, their processes are gone."""
    pool = Workers(mark_and_sleep, 2, lambda: worker_context(("sleepy",)))
    try:
        for _ in range(4):
            pool.submit(str(tmp_path))
        pool.completed()  # starts them
        pids = _started(tmp_path, 2)
    finally:
        pool.close()
    assert all(_gone(pid) for pid in pids)
    assert not list(tmp_path.glob("finished-*"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_fleet_run_kills_its_workers(tmp_path: Path, signum: int) -> None:
    """A signal while the partitions run raises where the command waits (KeyboardInterrupt;
    SystemExit(128 + N) as the CLI's handler does) and the workers are killed, not awaited."""
    for n in range(4):
        TraceBuilder().write(tmp_path / f"t{n}.jsonl")

    def terminated(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    saved = signal.getsignal(signum)
    # SIGINT as a terminal gives it, whatever an earlier test or the suite's start left
    # (ignored under `nohup`: the run then ended by itself, in a KeyError of the dummy tables)
    signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else terminated)
    pids: list[int] = []

    def interrupt() -> None:
        pids.extend(_started(tmp_path, 2))
        os.kill(os.getpid(), signum)

    sender = threading.Thread(target=interrupt, daemon=True)
    sender.start()
    try:
        with pytest.raises((KeyboardInterrupt, SystemExit)):
            run([str(tmp_path)], workers=2, partitions=4, analyze=slow_part)
    finally:
        signal.signal(signum, saved)
        sender.join(timeout=120)
    assert pids and all(_gone(pid) for pid in pids)
    assert not list(tmp_path.glob("finished-*"))
