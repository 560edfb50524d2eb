"""Every line accounted for on a starved machine (issue 26): burners on the recorder's CPUs,
a writer stopped with SIGSTOP for a while or for good. Nothing here hopes for a busy machine:
the tests make it busy, or stop the writer, themselves, and wait on events, not on time."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from scripts.taprun import assert_recorded, assert_transparent, children, start_tap

BURN = "while True: pass"


def _json_lines(seed: int, count: int, size: int) -> bytes:
    chance = random.Random(seed)
    pads = (b"x" * chance.randrange(size) for _ in range(count))
    return b"".join(
        b'{"jsonrpc":"2.0","id":%d,"params":{"p":"%s"}}\n' % (n, p) for n, p in enumerate(pads)
    )


def _wait_for(condition: Callable[[], bool], seconds: float) -> None:
    """A hang guard: `condition` is an event the test waits for, `seconds` far beyond it."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.02)


@contextmanager
def burners(count: int) -> Iterator[None]:
    """`count` busy processes on this process's CPUs (so on the recorder's too), ended after."""
    cpus = os.sched_getaffinity(0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BURN],
            preexec_fn=lambda: os.sched_setaffinity(0, cpus),
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def _writer_of(pids: Path, agent_pids: Path) -> int:
    """The pid of the recorder's writer process: the tap's child that is not the agent. The
    agent writes its pid once it runs, and the tap forks the writer after that; nothing of a
    child is read but its parent (reading /proc/N/cmdline raced the agent's own end)."""
    _wait_for(agent_pids.exists, 120)
    agent = int(agent_pids.read_text().split()[0])
    _wait_for(lambda: pids.exists() and pids.read_text().endswith("\n"), 120)  # written whole
    tap = int(pids.read_text())
    others: list[int] = []

    def forked() -> bool:
        others[:] = [pid for pid in children(tap) if pid != agent]
        return bool(others)

    _wait_for(forked, 120)
    (writer,) = others
    return writer


def test_a_starved_writer_is_waited_for_and_every_line_is_accounted(tmp_path: Path) -> None:
    """Busy processes on every CPU of the recorder (2 per CPU and 2 more: load 6 or more on 2
    cores, on top of whatever the machine runs): the recorder waits for a writer that is slow
    but working, and the trace holds every line or counts it, ending with `exit` and a
    balanced `account`."""
    client_sends, agent_sends = _json_lines(21, 1000, 2000), _json_lines(22, 1000, 2000)
    with burners(2 * len(os.sched_getaffinity(0)) + 2):  # the writer is starved from its start
        session = start_tap(tmp_path, client_sends=client_sends, agent_sends=agent_sends)
        try:
            run = session.finish(timeout=900)
        finally:
            session.stop()
    assert run.code == 0, run.stderr
    assert "not written" not in run.stderr
    assert_transparent(run, client_sends, agent_sends, drops=True)
    assert run.records[-2]["event"] == "exit"


def test_a_writer_stopped_for_a_while_catches_up(tmp_path: Path) -> None:
    """The writer stopped (SIGSTOP) while a burst fills the ring, and let go (SIGCONT) while
    the recorder waits for it at the end: the full ring's lines are counted as dropped, the
    rest recorded; nothing is left unwritten, and the account balances."""
    pids, gate, agent_pid = tmp_path / "tap-pid", tmp_path / "gate", tmp_path / "agent-pid"
    client_sends, agent_sends = _json_lines(23, 2000, 400), _json_lines(24, 20_000, 400)
    session = start_tap(
        tmp_path,
        client_sends=client_sends,
        agent_sends=agent_sends,
        agent_args=("--gate", str(gate), "--pid-file", str(agent_pid)),
        client_args=("--pid-file", str(pids)),
        # the grace is also how long the tap waits for a writer that makes no progress: far
        # beyond the test's own steps, however busy the machine (120 s was not, at load 18)
        record_args=("--queue-bytes", str(1 << 20), "--grace", "600"),
    )
    writer = 0
    try:
        writer = _writer_of(pids, agent_pid)
        os.kill(writer, signal.SIGSTOP)
        gate.touch()
        # The client has all of it once the tap closed its stdout: the agent has exited and
        # the tap is waiting for its (stopped) writer.
        _wait_for(lambda: session.received() >= len(agent_sends), 300)
        os.kill(writer, signal.SIGCONT)
        run = session.finish(timeout=300)
    finally:
        if writer:
            with suppress(ProcessLookupError):
                os.kill(writer, signal.SIGCONT)
        session.stop()
    assert run.code == 0, run.stderr
    assert_transparent(run, client_sends, agent_sends, drops=True)
    assert sum(e["count"] for e in run.events("dropped")) > 0
    assert run.records[-1]["by"] == "writer"


def test_a_writer_stopped_for_good_leaves_the_account_in_the_trace(tmp_path: Path) -> None:
    """The writer stopped (SIGSTOP) and never let go, and a SIGTERM to the recorder once the
    agent has exited (it then waits at most a second without progress): the recorder stops
    the writer, cuts the trace back to its last whole record and appends, itself, the events
    the writer never took (`exit`), an `error` (cause `writer`) and the account, in which
    every line is recorded, dropped or not written; stderr says so once."""
    pids, gate, agent_pid = tmp_path / "tap-pid", tmp_path / "gate", tmp_path / "agent-pid"
    client_sends, agent_sends = _json_lines(25, 3000, 300), _json_lines(26, 3000, 300)
    session = start_tap(
        tmp_path,
        client_sends=client_sends,
        agent_sends=agent_sends,
        agent_args=("--gate", str(gate), "--exit", "4", "--pid-file", str(agent_pid)),
        client_args=("--pid-file", str(pids)),
        record_args=("--grace", "600"),
    )
    writer = 0
    try:
        writer = _writer_of(pids, agent_pid)
        _wait_for(lambda: session.trace.exists() and session.trace.stat().st_size > 0, 120)
        os.kill(writer, signal.SIGSTOP)
        gate.touch()
        _wait_for(agent_pid.exists, 300)
        agent = int(agent_pid.read_text().split()[0])
        _wait_for(lambda: not os.path.exists(f"/proc/{agent}"), 300)  # reaped by the tap
        os.kill(int(pids.read_text()), signal.SIGTERM)
        run = session.finish(timeout=300)
    finally:
        if writer:
            with suppress(ProcessLookupError):
                os.kill(writer, signal.SIGKILL)
        session.stop()
    assert run.code == 4
    assert run.stderr.count("records were not written") == 1
    assert "appended it to the trace" in run.stderr
    exit_, error, account = run.records[-3:]
    assert exit_["event"] == "exit" and exit_["code"] == 4
    assert error["event"] == "error" and error["cause"] == "writer"
    assert account["event"] == "account" and account["by"] == "tap"
    unwritten = 0
    for src, sent in (("client", client_sends), ("agent", agent_sends)):
        counts = account["streams"][src]
        assert counts["lines"] == sent.count(b"\n")
        assert counts["recorded"] == len(run.of(src))
        assert counts["recorded"] + counts["dropped"] + counts["unwritten"] == counts["lines"]
        unwritten += counts["unwritten"]
        assert_recorded(run, src, sent[: _prefix_of(run, src, sent)], drops=True)
    assert unwritten > 0


def _prefix_of(run: object, src: str, sent: bytes) -> int:
    """The bytes of `sent` up to the end of the lines the trace recorded or dropped."""
    from scripts.taprun import Run

    assert isinstance(run, Run)
    count = len(run.of(src)) + sum(
        e["count"] for e in run.events("dropped") if e.get("stream") == src
    )
    at = 0
    for _ in range(count):
        at = sent.index(b"\n", at) + 1
    return at
