"""The processes behind --workers: a dead worker costs its own task, which runs again once in
a new process; a second death is a WorkerError that names the processes, the signal and the
task; nothing is left running after a run, whatever ended it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from acp_trace.errors import WorkerError
from acp_trace.trace.pool import worker_context
from acp_trace.trace.workers import Workers, ended
from crashy import fragile


def _pool(count: int = 2) -> Workers:
    return Workers(
        fragile, count, lambda: worker_context(("crashy",)), describe=lambda t: f"task {t[1]}"
    )


def _run_all(pool: Workers, tasks: list[tuple[str, int, int]]) -> dict[int, tuple[bool, object]]:
    with pool:
        index = {pool.submit(task): task[1] for task in tasks}
        return {index[i]: outcome for i, outcome in pool.results()}


def _runs(folder: Path, n: int) -> int:
    return len(list(folder.glob(f"run-{n}-*")))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_killed_worker_costs_its_own_task_once(tmp_path: Path) -> None:
    """Task 3's first process is SIGKILLed: task 3 runs again in a new process and gives its
    result; every other task runs once; all outcomes are there."""
    tasks = [(str(tmp_path), n, 1 if n == 3 else 0) for n in range(8)]
    outcomes = _run_all(_pool(), tasks)
    assert outcomes == {n: (True, n * n) for n in range(8)}
    assert [_runs(tmp_path, n) for n in range(8)] == [1, 1, 1, 2, 1, 1, 1, 1]
    pids = {p.name.rsplit("-", 1)[1] for p in tmp_path.glob("run-3-*")}
    assert len(pids) == 2  # two processes


def test_a_task_whose_second_worker_dies_too_is_named(tmp_path: Path) -> None:
    """Task 2 kills every process that runs it: after two, its outcome is a WorkerError that
    says which processes died, by which signal, holding which task; the others complete."""
    tasks = [(str(tmp_path), n, 99 if n == 2 else 0) for n in range(5)]
    outcomes = _run_all(_pool(), tasks)
    ok, error = outcomes.pop(2)
    assert not ok
    assert isinstance(error, WorkerError)
    pids = sorted(int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("run-2-*"))
    assert len(pids) == 2
    message = str(error)
    assert message.count("was killed by SIGKILL") == 2
    assert f"process {pids[0]} " in message and f"process {pids[1]}, " in message
    assert "while reading task 2" in message and "\n" not in message
    assert outcomes == {n: (True, n * n) for n in (0, 1, 3, 4)}


def test_a_worker_killed_between_tasks_loses_nothing(tmp_path: Path) -> None:
    """An idle worker that dies is replaced when there is work again; no task is lost."""
    with _pool(1) as pool:
        pool.submit((str(tmp_path), 0, 0))
        assert list(pool.results()) == [(0, (True, 0))]
        (pid,) = {int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("run-0-*")}
        os.kill(pid, signal.SIGKILL)
        pool.submit((str(tmp_path), 1, 0))
        assert list(pool.results()) == [(1, (True, 1))]


def test_workers_ignore_sigint_and_are_gone_after_close(tmp_path: Path) -> None:
    """Ctrl-C at a terminal reaches every process of the group: a worker goes on (the parent
    decides), and after close no worker is left, even one at work."""
    with _pool(1) as pool:
        pool.submit((str(tmp_path), 0, 0))
        assert list(pool.results()) == [(0, (True, 0))]
        (pid,) = {int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("run-0-*")}
        os.kill(pid, signal.SIGINT)
        pool.submit((str(tmp_path), 1, 0))
        assert list(pool.results()) == [(1, (True, 1))]
        assert _runs(tmp_path, 1) == 1 and _alive(pid)
    assert not _alive(pid)


@pytest.mark.parametrize(
    ("code", "said"),
    [(-9, "was killed by SIGKILL"), (-15, "was killed by SIGTERM"), (3, "exited with status 3")],
)
def test_how_a_process_ended_is_said(code: int, said: str) -> None:
    """Exit statuses in words: the signal's name, or the status."""
    assert ended(code) == said
