"""The recorder's reliability suite (issues 19 and 20): hostile streams and every fault.

Each hostile stream goes both ways at once and must arrive byte for byte (sha256 of both
directions), leave a valid trace whose `seq` counts 1, 2, 3, ... and record every line in
order or count it in a `dropped` event of its stream. Each fault must leave the traffic as
it was, the agent's exit code, a valid trace that says what happened, and one line on stderr
when a person must know. docs/reliability.md lists the cases and their last results.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from acp_trace.record.ring import RING_BYTES
from acp_trace.record.ring_memory import KEEP
from scripts.taprun import (
    AGENT,
    CLIENT,
    RECORD,
    Run,
    assert_account,
    assert_transparent,
    check_trace,
    children,
    run_tap,
    sha,
    start_tap,
)

# ---------------------------------------------------------------- hostile streams


def _random(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _json_lines(seed: int, count: int, size: int) -> bytes:
    chance = random.Random(seed)
    lines = []
    for n in range(count):
        pad = "x" * chance.randrange(size)
        lines.append(
            b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"p":"%s"}}\n' % (n, pad.encode())
        )
    return b"".join(lines)


HOSTILE: dict[str, Callable[[], tuple[bytes, bytes]]] = {
    "random bytes": lambda: (_random(1, 4 << 20), _random(2, 4 << 20)),
    "invalid UTF-8": lambda: (
        (b"\xff\xfe\xc3( " + bytes(range(128, 256)) + b"\n") * 3000,
        (b"ok \xed\xa0\x80 surrogate \xf4\x90\x80\x80 too big\n") * 3000,
    ),
    "NUL bytes": lambda: (
        (b"\x00" * 100 + b"\n" + b'{"a":"\\u0000"}\x00\n') * 3000,
        b"\x00\n\x00\x00\n" * 20000,
    ),
    "CR without LF": lambda: (b"one\rtwo\r" * 20000 + b"\n" + b"\r" * 5000, b"\r\r\n\r" * 20000),
    "CRLF": lambda: (
        (b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n' + b"text\r\n") * 5000,
        b"\r\n" * 20000,
    ),
    "no final newline": lambda: (b"a\nb\nc", b'{"x":1}\n{"unfinished":'),
    "a 64 MiB line": lambda: (b"z" * (64 << 20) + b"\n", b"small\n" * 10),
    "100k tiny lines": lambda: (b"\n" * 100_000, b"x\n" * 100_000),
    "both directions at full speed": lambda: (
        _json_lines(3, 20_000, 2000),
        _json_lines(4, 20_000, 2000),
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_stream_passes_both_ways_and_is_recorded(tmp_path: Path, name: str) -> None:
    """Random bytes, invalid UTF-8, NUL, CR, CRLF, no final newline, a 64 MiB line, 100k tiny
    lines, full speed both ways: sha256 of both directions, contiguous seq, every line recorded
    or counted."""
    client_sends, agent_sends = HOSTILE[name]()
    run = run_tap(tmp_path, client_sends=client_sends, agent_sends=agent_sends)
    assert run.code == 0, run.stderr
    assert_transparent(run, client_sends, agent_sends, drops=True)
    assert run.events("exit")[0]["code"] == 0


def test_a_client_that_never_reads_cannot_hang_the_tap(tmp_path: Path) -> None:
    """An editor that never reads: the agent blocks, gets SIGTERM after the grace period, the
    tap records what it read, says a pipe stayed full, and exits with the agent's code."""
    agent_sends = b"y" * 99 + b"\n"
    agent_sends *= 40_000
    run = run_tap(
        tmp_path,
        agent_sends=agent_sends,
        client_args=("--never-read",),
        record_args=("--grace", "0.5"),
        timeout=120,
    )
    assert run.code == 128 + signal.SIGTERM
    assert [k["signal"] for k in run.events("kill")] == [signal.SIGTERM]
    assert any(e.get("cause") == "drain" for e in run.events("error"))
    recorded = [rec for rec, _raw in run.of("agent")]
    assert 0 < len(recorded) < 40_000
    assert all(rec["text"] == "y" * 99 for rec in recorded)


# ---------------------------------------------------------------- memory and pump errors


def test_a_line_without_newline_is_never_held_whole(tmp_path: Path) -> None:
    """A 256 MiB line without a newline: the recorder keeps at most --max-record-bytes of it
    (peak memory of every process far below the line), forwards it all, and records it cut
    with its real length (or, when the writer fell behind that much, counts it as dropped)."""
    size, limit = 256 << 20, 1 << 20
    trace = tmp_path / "t.jsonl"
    recorder = [*RECORD, "-o", str(trace), "--max-record-bytes", str(limit), "--grace", "300"]
    recorder += ["--queue-bytes", str(32 << 20), "--", *AGENT, "--generate", str(size)]
    # A small parent, so that the peak memory of the writer_process it waits for is their own.
    measure = (
        "import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:]);"
        " _pid, status, usage = os.wait4(p.pid, 0);"
        " print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *CLIENT, "--", *recorder],
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, peak_kib = map(int, done.stdout.split())
    assert code == 0, done.stderr
    assert peak_kib * 1024 < 120 << 20  # every process stayed far below the 256 MiB line
    run = Run(0, "", trace.read_bytes().splitlines(keepends=True), b"", b"", b"")
    check_trace(run)
    dropped = [e for e in run.events("dropped") if e["stream"] == "agent"]
    if dropped:
        assert [e["count"] for e in dropped] == [1] and run.of("agent") == []
    else:
        ((rec, _raw),) = run.of("agent")
        assert rec["truncated"] is True and rec["bytes"] == size and rec["eol"] is False
        assert rec["text"] == "x" * limit


class _Ring:
    """A stand-in for the ring that fails on some calls, as an exhausted heap would."""

    def __init__(self, fail_on: set[int], error: type[Exception]) -> None:
        self.calls = 0
        self.fail_on, self.error = fail_on, error
        self.recorded: list[bytes] = []
        self.lost: list[bytes] = []
        self.events: list[dict[str, Any]] = []

    def chunk(self, _src: str, _t: int, data: bytes) -> None:
        self.calls += 1
        if self.calls in self.fail_on:
            raise self.error("no memory for the hand-on")
        self.recorded.append(data)

    def lose(self, _src: str, data: bytes) -> None:
        self.lost.append(data)

    def event(self, _t: int, name: str, **fields: Any) -> bool:
        self.events.append({"event": name, **fields})
        return True

    def end(self, _src: str, _t: int) -> bool:
        return True


class _FlakyOs:
    """`os` for the pump, whose read and write fail with MemoryError on some calls."""

    def __init__(self, fail_reads: set[int], fail_writes: set[int]) -> None:
        self.reads = self.writes = 0
        self.fail_reads, self.fail_writes = fail_reads, fail_writes

    def read(self, fd: int, size: int) -> bytes:
        self.reads += 1
        if self.reads in self.fail_reads:
            raise MemoryError
        return os.read(fd, size)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self.writes += 1
        if self.writes in self.fail_writes:
            raise MemoryError
        return os.write(fd, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


@pytest.mark.parametrize("error", [MemoryError, RuntimeError])
def test_an_error_in_a_pump_never_cuts_the_stream(
    monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """MemoryError (or any error) in reading, handing on or forwarding: every byte is still
    forwarded in order, the reads that could not be recorded are counted as lost (so the
    writer knows where the gap is), and an `error` event says so once."""
    from acp_trace.record import pump

    monkeypatch.setattr(pump, "os", _FlakyOs({2, 9}, {3, 4, 11}))
    data = _random(7, 4 << 20)
    source_r, source_w = os.pipe()
    sink_r, sink_w = os.pipe()
    got: list[bytes] = []

    def feed() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(source_w, view[: 1 << 16]) :]
        os.close(source_w)

    def drain() -> None:
        while chunk := os.read(sink_r, 1 << 20):
            got.append(chunk)

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()
    ring = _Ring({3, 5}, error)
    pump.Pump(source_r, sink_w, "agent", ring).run()  # type: ignore[arg-type]
    os.close(sink_w)
    for thread in threads:
        thread.join(60)
    assert sha(b"".join(got)) == sha(data)
    assert len(ring.lost) == 2 and b"".join(ring.recorded + ring.lost) != b""
    assert sum(map(len, ring.recorded + ring.lost)) == len(data)
    messages = [e["message"] for e in ring.events]
    assert sum("not recorded" in m for m in messages) == 1
    assert sum("out of memory reading" in m for m in messages) == 1


def test_a_burst_costs_memory_only_while_it_lasts(tmp_path: Path) -> None:
    """After a 48 MB burst the ring's shared memory (resident in the tap) goes back to KEEP
    once the session is idle; traffic after that is forwarded and recorded as before. The
    queue is the ring alone (no backlog), so a writer behind the burst lets it into the
    ring's cold pages, which are what is given back."""
    pids, gate = tmp_path / "tap-pid", tmp_path / "gate"
    burst, later = _json_lines(12, 40_000, 2400), _json_lines(13, 5000, 200)
    session = start_tap(
        tmp_path,
        client_sends=burst,
        agent_sends=later,
        agent_args=("--gate", str(gate)),
        # the client's stdin ends first; the agent is gated
        record_args=("--grace", "120", "--queue-bytes", str(RING_BYTES)),
        client_args=("--pid-file", str(pids)),
    )
    try:
        _wait_for(lambda: _agent_got_at_least(tmp_path, len(burst)), 120)
        _wait_for(pids.exists, 60)
        tap_pid = int(pids.read_text())
        peak = _shared_kib(tap_pid)
        kept = (KEEP >> 10) + (4 << 10)
        _wait_for(lambda: _shared_kib(tap_pid) < kept, 60)  # idle for 2 s: given back
        gate.touch()
        run = session.finish(timeout=120)
    finally:
        _stop(session.proc)
    assert peak > 32 << 10
    assert run.code == 0, run.stderr
    assert_transparent(run, burst, later, drops=True)


def _agent_got_at_least(tmp_path: Path, size: int) -> bool:
    """The scripted agent writes what it receives as it goes (buffered); True once `size`
    bytes are in its file."""
    path = tmp_path / "a.out"
    return path.exists() and path.stat().st_size >= size - (64 << 10)


def _shared_kib(pid: int) -> int:
    """KiB of shared memory resident in a process (RssShmem: the tap's ring)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssShmem:"):
                return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- a stalled trace target


def test_a_fifo_nobody_opens_never_blocks_the_agent_or_the_exit(tmp_path: Path) -> None:
    """-o a FIFO without a reader: the agent starts and answers at once, and the tap exits
    after it with its code, saying on stderr that the records were not written."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    data = b'{"jsonrpc":"2.0","method":"x"}\n' * 500
    run = run_tap(
        tmp_path,
        client_sends=data,
        agent_sends=data,
        trace=fifo,
        agent_args=("--exit", "7"),
        record_args=("--grace", "0.5"),
        timeout=120,
    )
    assert run.code == 7
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("took no more records for 0.5 s") == 1


def test_a_fifo_nobody_reads_never_keeps_the_tap_from_exiting(tmp_path: Path) -> None:
    """-o a FIFO whose reader never reads (a stuck consumer): forwarding goes on, the tap
    exits with the agent's code after a bounded wait and counts the records not written."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    data = b'{"jsonrpc":"2.0","method":"x","params":{"pad":"%s"}}\n' % (b"p" * 900)
    data *= 2000
    try:
        run = run_tap(
            tmp_path,
            client_sends=data,
            agent_sends=data,
            trace=fifo,
            agent_args=("--exit", "3"),
            record_args=("--grace", "0.5"),
            timeout=120,
        )
    finally:
        os.close(reader)
    assert run.code == 3
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("records were not written") == 1


def test_a_full_queue_drops_records_and_counts_every_line(tmp_path: Path) -> None:
    """A trace reader that lags behind the traffic fills the queue: chunks are dropped, and
    every line of both streams is either recorded, in order, or counted in a `dropped` event
    of its stream; seq stays contiguous."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    client_sends, agent_sends = _json_lines(5, 20_000, 400), _json_lines(6, 20_000, 400)
    record_args = ("--queue-bytes", str(1 << 20), "--grace", "30")
    session = start_tap(
        tmp_path,
        client_sends=client_sends,
        agent_sends=agent_sends,
        trace=fifo,
        record_args=record_args,
    )
    data = bytearray()
    try:
        _wait_for(lambda: session.received() >= len(agent_sends), 120)
        os.set_blocking(reader, True)
        while chunk := os.read(reader, 1 << 20):
            data += chunk
    finally:
        os.close(reader)
    copy = tmp_path / "trace-copy.jsonl"
    copy.write_bytes(data)
    run = session.finish(trace_copy=copy, timeout=120)
    assert run.code == 0, run.stderr
    assert_transparent(run, client_sends, agent_sends, drops=True)
    assert sum(e["count"] for e in run.events("dropped")) > 0


# ---------------------------------------------------------------- signals


def test_sigterm_reaches_an_agent_that_ignores_it_as_sigkill(tmp_path: Path) -> None:
    """SIGTERM to the tap while the agent ignores it: forwarded, then SIGKILL after the grace
    period (a `kill` event says why); the tap exits 128+9."""
    run = run_tap(
        tmp_path,
        agent_args=("--ready", "--ignore-term"),
        client_args=("--keep-open", "--signal-on-ready", str(signal.SIGTERM)),
        record_args=("--grace", "0.5"),
        timeout=120,
    )
    assert run.code == 128 + signal.SIGKILL
    (kill,) = run.events("kill")
    assert kill["signal"] == signal.SIGKILL and "SIGTERM" in kill["reason"]


@pytest.mark.parametrize("state", ["waiting for a stuck trace", "draining a pipe a child holds"])
def test_sigterm_ends_the_tap_after_the_agent_exited(tmp_path: Path, state: str) -> None:
    """SIGTERM to the tap after the agent exited, while it waits (a grace period of 120 s) for
    a stuck trace or for a pipe the agent's child keeps open: the tap ends within seconds."""
    pids = tmp_path / "pids"
    how: dict[str, Any] = {"client_args": ("--pid-file", str(pids))}
    how["record_args"] = ("--grace", "120")
    if state == "waiting for a stuck trace":
        fifo = tmp_path / "trace.fifo"
        os.mkfifo(fifo)
        how["trace"] = fifo
    else:
        how["agent_args"] = ("--child", "--pid-file", str(tmp_path / "agent-pids"))
    session = start_tap(tmp_path, client_sends=b"bye\n", **how)
    try:
        _wait_for(lambda: _agent_got(tmp_path, b"bye\n"), 60)
        _wait_for(pids.exists, 60)
        time.sleep(0.5)  # the tap is past the agent's exit now
        os.kill(int(pids.read_text()), signal.SIGTERM)
        start = time.monotonic()
        session.proc.communicate(timeout=60)
        assert time.monotonic() - start < 30  # not the 120 s grace period
    finally:
        _kill_listed(tmp_path / "agent-pids", skip_first=True)
        _stop(session.proc)
    assert session.proc.returncode == 0


def _agent_got(tmp_path: Path, data: bytes) -> bool:
    """True once the scripted agent read `data` and its stdin's end (it is exiting then)."""
    path = tmp_path / "a.out"
    return path.exists() and path.read_bytes() == data


# ---------------------------------------------------------------- full disks


@cache
def _namespaces() -> bool:
    probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True)
    return probe.returncode == 0


def _small_fs(
    tmp_path: Path, kib: int, *, free_kib: int | None = None
) -> tuple[tuple[str, ...], Path, Path]:
    """A command prefix that runs the session in a mount namespace with a tmpfs of `kib` KiB
    (full but for `free_kib`, if given); the trace path inside and where it is copied out."""
    if not _namespaces():
        pytest.skip("no user and mount namespaces here (unshare -Urm)")
    fs, copy = tmp_path / "fs", tmp_path / "trace-copy.jsonl"
    fs.mkdir()
    fill = ""
    if free_kib is not None:
        fill = (
            f'head -c {free_kib * 1024} /dev/zero > "$0/room";'
            ' cat /dev/zero > "$0/filler" 2>/dev/null; rm "$0/room";'
        )
    script = (
        f'mount -t tmpfs -o size={kib}k acp-trace-test "$0" || exit 97; {fill}'
        f' "$@"; code=$?; cp "$0/trace.jsonl" "{copy}" 2>/dev/null; exit $code'
    )
    return ("unshare", "-Urm", "sh", "-c", script, str(fs)), fs / "trace.jsonl", copy


@pytest.mark.parametrize("when", ["mid-session", "at start"])
def test_a_full_disk_leaves_a_valid_trace_ending_with_an_error(tmp_path: Path, when: str) -> None:
    """The disk fills up (mid-session, or is nearly full at start): forwarding goes on, stderr
    says it once, and the trace holds whole records only, ending with an `error` event."""
    data = _json_lines(8, 3000, 300)
    if when == "mid-session":
        prefix, trace, copy = _small_fs(tmp_path, 256)
    else:
        # room for the header (3.4 KB: the redaction policy is most of it), the error event
        # and the account, not for the first batch
        prefix, trace, copy = _small_fs(tmp_path, 256, free_kib=5)
    run = run_tap(
        tmp_path, client_sends=data, agent_sends=data, trace=trace, trace_copy=copy, prefix=prefix
    )
    assert run.code == 0, run.stderr
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("acp-trace: cannot write the trace") == 1
    assert "No space left on device" in run.stderr
    assert run.lines and run.lines[0].startswith(b'{"acp_trace":1')
    last = run.records[-2]
    assert last["event"] == "error" and last["cause"] == "write"
    assert_account(run, "agent", data, written=False)
    assert (len(run.records) > 100) is (when == "mid-session")


# ---------------------------------------------------------------- the trace removed


@pytest.mark.parametrize("what", ["the trace", "its directory"])
def test_a_removed_trace_is_noticed_once_and_forwarding_goes_on(tmp_path: Path, what: str) -> None:
    """The trace (or its directory) is removed while recording: stderr says so once and the
    session goes on byte for byte."""
    folder = tmp_path / "traces"
    folder.mkdir()
    trace, gate = folder / "t.jsonl", tmp_path / "gate"
    data = _json_lines(9, 2000, 200)
    session = start_tap(
        tmp_path, client_sends=data, agent_sends=data, trace=trace, agent_args=("--gate", str(gate))
    )
    _wait_for(lambda: trace.exists() and trace.stat().st_size > 0, 60)
    if what == "the trace":
        trace.unlink()
    else:
        shutil.rmtree(folder)
    gate.touch()
    run = session.finish(timeout=120)
    assert run.code == 0, run.stderr
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("was removed while recording") == 1


# ---------------------------------------------------------------- deep JSON, big lines


def test_deeply_nested_json_is_recorded_not_lost(tmp_path: Path) -> None:
    """100,000 levels of arrays and of objects: recorded (as text, too deep to check), never
    an encoding failure."""
    arrays = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    objects = b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n"
    run = run_tap(tmp_path, client_sends=arrays + objects, agent_sends=objects + arrays)
    assert_transparent(run, arrays + objects, objects + arrays)
    assert run.events("error") == []


def test_a_128_mib_line_passes_while_the_other_direction_flows(tmp_path: Path) -> None:
    """A 128 MiB line one way and a stream of small lines the other, at once: both arrive byte
    for byte; the long line is recorded cut at the default --max-record-bytes (64 MiB) with
    its real length. (bench_tap.py `stall` measures how long the small lines wait.)"""
    big = b'{"jsonrpc":"2.0","method":"big","params":{"d":"' + b"b" * (128 << 20) + b'"}}\n'
    small = _json_lines(10, 50_000, 100)
    run = run_tap(tmp_path, client_sends=big, agent_sends=small)
    assert_transparent(run, big, small, drops=True)
    cut = [rec for rec, _raw in run.of("client") if rec.get("truncated")]
    assert all(rec["bytes"] == len(big) - 1 for rec in cut)


# ---------------------------------------------------------------- a killed tap


def test_the_agent_never_outlives_a_killed_tap(tmp_path: Path) -> None:
    """SIGKILL to the tap: the agent dies with it (parent-death signal), the writer's watchdog
    ends the agent's process group (a child that ignores SIGTERM too), and the trace ends with
    the `error` and `kill` events that say so."""
    trace, pids = tmp_path / "t.jsonl", tmp_path / "pids"
    agent = [*AGENT, "--ready", "--ignore-eof", "--ignore-term", "--child", "--pid-file", str(pids)]
    with subprocess.Popen(
        [*RECORD, "-o", str(trace), "--grace", "0.5", "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as recorder:
        assert recorder.stdout is not None
        assert recorder.stdout.readline() == b'{"ready":true}\n'
        _wait_for(pids.exists, 60)
        recorder.kill()
    for pid in map(int, pids.read_text().split()):
        _wait_for(lambda pid=pid: _gone(pid), 60)  # type: ignore[misc]
    _wait_for(lambda: trace.read_bytes().count(b'"event":"kill"') == 2, 60)
    time.sleep(0.2)
    run = Run(0, "", trace.read_bytes().splitlines(keepends=True), b"", b"", b"")
    check_trace(run)
    error, *kills = run.records[-3:]
    assert error["event"] == "error" and error["cause"] == "recorder"
    assert [k["signal"] for k in kills] == [signal.SIGTERM, signal.SIGKILL]


def test_the_agent_dies_with_the_tap_even_without_the_writer(tmp_path: Path) -> None:
    """SIGKILL to the tap and its writer at once: the parent-death signal alone ends the
    agent (a child of the agent that ignores SIGTERM is then left; see docs)."""
    pids = tmp_path / "pids"
    agent = [*AGENT, "--ready", "--ignore-eof", "--ignore-term", "--child", "--pid-file", str(pids)]
    with subprocess.Popen(
        [*RECORD, "-o", str(tmp_path / "t.jsonl"), "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as recorder:
        assert recorder.stdout is not None
        try:
            assert recorder.stdout.readline() == b'{"ready":true}\n'
            _wait_for(pids.exists, 60)
            os.killpg(recorder.pid, signal.SIGKILL)
            recorder.wait(timeout=60)
            agent_pid = int(pids.read_text().split()[0])
            _wait_for(lambda: _gone(agent_pid), 60)
        finally:
            _kill_listed(pids, skip_first=True)


def test_a_writer_that_dies_never_stops_forwarding(tmp_path: Path) -> None:
    """The writer process killed mid-session: forwarding goes on byte for byte, the tap says
    once that nothing more is recorded, and exits with the agent's code."""
    pids, gate = tmp_path / "tap-pid", tmp_path / "gate"
    data = _json_lines(11, 2000, 200)
    session = start_tap(
        tmp_path,
        client_sends=data,
        agent_sends=data,
        agent_args=("--gate", str(gate), "--exit", "5"),
        client_args=("--pid-file", str(pids)),
    )
    _wait_for(pids.exists, 60)
    tap_pid = int(pids.read_text())
    _wait_for(lambda: len(children(tap_pid)) == 2, 60)
    agent_pid = _agent_of(tap_pid)
    (writer,) = [pid for pid in children(tap_pid) if pid != agent_pid]
    os.kill(writer, signal.SIGKILL)
    gate.touch()
    run = session.finish(timeout=120)
    assert run.code == 5
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("the trace writer ended early (signal 9)") == 1


# ---------------------------------------------------------------- record -o


def _refusal_setup(tmp_path: Path, kind: str) -> tuple[Path, Callable[[], bool]]:
    """A -o target of the given kind, and a check that it was left as it was."""
    target, victim = tmp_path / "t.jsonl", tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if kind == "a symlink to a trace":
        victim.write_text('{"acp_trace":1,"kind":"header"}\n')
        target.symlink_to(victim)
    elif kind == "a dangling symlink":
        target.symlink_to(tmp_path / "nowhere.jsonl")
        return target, lambda: not (tmp_path / "nowhere.jsonl").exists() and target.is_symlink()
    elif kind == "a directory":
        target.mkdir()
        return target, lambda: target.is_dir() and not any(target.iterdir())
    else:
        target.write_text("# notes, not a trace\n")
        return target, lambda: target.read_text() == "# notes, not a trace\n"
    content = victim.read_text()
    return target, lambda: victim.read_text() == content and target.is_symlink()


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("a symlink to a trace", "found a symbolic link"),
        ("a dangling symlink", "found a symbolic link"),
        ("a directory", "found a directory"),
        ("a file that is not a trace", "found a file that is not one"),
    ],
)
def test_record_o_refuses_what_it_must_not_write(tmp_path: Path, kind: str, said: str) -> None:
    """`record -o` naming a symlink (planted, or dangling), a directory or a file that is not a
    trace: one line on stderr, exit 2, the agent never started, the target left as it was."""
    target, untouched = _refusal_setup(tmp_path, kind)
    pids = tmp_path / "pids"
    command = [*RECORD, "-o", str(target), "--", *AGENT, "--pid-file", str(pids)]
    done = subprocess.run(command, input=b"", capture_output=True, timeout=60)
    assert done.returncode == 2
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(f"acp-trace: {target}: ") and said in line
    assert not pids.exists() and untouched()


# ---------------------------------------------------------------- helpers


def _wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.02)


def _gone(pid: int) -> bool:
    """True once a process has ended (a zombie nobody reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


def _agent_of(tap_pid: int) -> int:
    """The tap's child that runs the scripted agent."""
    for pid in children(tap_pid):
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"agent.py" in cmdline.read():
                return pid
    raise AssertionError("no agent")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill a session still running, without waiting for pipes its orphans may hold."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


def _kill_listed(pids: Path, *, skip_first: bool) -> None:
    """Kill the writer_process a --pid-file lists (the agent's children the test left behind)."""
    if pids.exists():
        for pid in list(map(int, pids.read_text().split()))[1 if skip_first else 0 :]:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
