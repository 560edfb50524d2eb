"""`--workers 2` from the command line, with the faults a user meets: a worker killed (SIGKILL,
as the OOM killer does) gives the serial output; Ctrl-C and SIGTERM end the command with
130 and 143 and one line; either way no process of the run is left and no temporary file.

The commands run in a child process whose handoff directory (`trace.handoff`, the workers'
files of rows) and TMPDIR are the test's own, so that what is left there is this run's. A
worker is known to be at work when it has the large trace open (reading it takes a while):
that is when it is killed, or the command signalled. No timing is asserted; waits have a
hang guard of HANG seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleetgen import write_traces
from tracebuilder import TraceBuilder

HANG = 120.0  # seconds: a hang guard, never a target
BIG = "a-big.jsonl"  # first in the order: the first partition or task reads it
BIG2 = "b-big.jsonl"  # a partition of its own too: with two workers, read at the same time
_CLI = """
import sys
from acp_trace.trace import handoff
handoff.SHARED_MEMORY = sys.argv.pop(1)
sys.argv[0] = "acp-trace"
from acp_trace.cli import main
main()
"""
COMMANDS = {  # the outputs go to OUT (a folder, or a file in it)
    "replays": ["replays", "--workers", "2"],
    "report": ["report", "--workers", "2", "-o", "OUT/report/"],
    "plot": ["plot", "--workers", "2", "-o", "OUT/gap.png"],
    "export": ["export", "--workers", "2", "--format", "csv", "-o", "OUT/csv/"],
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 small traces and two large ones (3 MB, which take a worker a while to read)."""
    folder = write_traces(tmp_path_factory.mktemp("workers") / "traces", 200)
    for name in (BIG, BIG2):
        b = TraceBuilder(agent="big-agent")
        rid = b.resume("big", dt=1)
        b.history("big", 6_000, dt=0.01)
        b.marker("big")
        b.response(rid)
        b.write(folder / "batch0" / name)
    return folder


@dataclass
class Run:
    """One command in a child process, and every process seen under it."""

    proc: subprocess.Popen[bytes]
    work: Path
    seen: set[int]

    def descendants(self) -> set[int]:
        found, todo = set(), [self.proc.pid]
        while todo:
            for child in _children(todo.pop()):
                found.add(child)
                todo.append(child)
        self.seen |= found
        return found

    def worker_reading(self, *names: str) -> int:
        """The pid of a process under the command that has names[0] open (a worker at work),
        once other processes have each of the other names open at the same time."""
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            reading = {}
            for pid in sorted(self.descendants()):
                for target in _open_files(pid):
                    reading |= {name: pid for name in names if target.endswith("/" + name)}
            if len(reading) == len(names) and len(set(reading.values())) == len(names):
                return reading[names[0]]
            assert self.proc.poll() is None, f"the command ended first: {self.finish()}"
            time.sleep(0.002)
        raise AssertionError(f"no workers had {names} open within {HANG} s")

    def finish(self) -> tuple[int, str]:
        """The exit code and stderr, once the command ends (a hang guard of HANG s)."""
        try:
            _out, err = self.proc.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            for pid in self.descendants():
                os.kill(pid, signal.SIGKILL)
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError(f"the command hung for {HANG} s") from None
        return self.proc.returncode, err.decode()

    def assert_clean(self) -> None:
        """No process of the run lives on; the handoff, temp and output folders hold no
        temporary file."""
        deadline = time.monotonic() + HANG
        while (alive := {p for p in self.seen if _alive(p)}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive, f"left running: {alive}"
        assert list((self.work / "shm").iterdir()) == []
        assert list((self.work / "tmp").iterdir()) == []
        assert [p for p in (self.work / "out").rglob("*") if ".tmp" in p.name] == []


def start(traces: Path, work: Path, command: str) -> Run:
    for sub in ("shm", "tmp", "out"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    args = [a.replace("OUT", str(work / "out")) for a in COMMANDS[command]]
    env = {**os.environ, "TMPDIR": str(work / "tmp"), "COLUMNS": "200"}
    with (work / "stdout").open("wb") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CLI, str(work / "shm"), *args, str(traces)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
        )
    return Run(proc, work, set())


def _children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            found.append(int(entry))
    return found


def _open_files(pid: int) -> Iterator[str]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            yield os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _outputs(stdout: bytes, out: Path) -> dict[str, bytes]:
    files = {"stdout": stdout}
    for path in sorted(out.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(out))] = path.read_bytes()
    return files


@pytest.mark.parametrize("command", ["replays", "export", "report", "plot"])
def test_a_killed_worker_gives_the_serial_output(
    traces: Path, tmp_path: Path, command: str
) -> None:
    """A worker SIGKILLed while it reads: its work runs again in a new process; the command
    ends 0 with the output of one process (replays, export: byte for byte). (Before, replays
    hung: the pool stopped the other worker with SIGTERM, whose handler a forked worker had
    inherited from the CLI, so it never ended; report, plot and export failed.)"""
    run = start(traces, tmp_path / "w", command)
    # the fleet (replays): the other worker is at work too, and must not be lost with it
    os.kill(run.worker_reading(*([BIG, BIG2] if command == "replays" else [BIG])), signal.SIGKILL)
    code, err = run.finish()
    assert code == 0, err
    assert "could not analyze" not in err and "Traceback" not in err
    run.assert_clean()
    if command in ("replays", "export"):  # (the report and the chart: their own tests)
        serial = subprocess.run(
            [
                sys.executable,
                "-c",
                _CLI,
                str(tmp_path),
                *_one_process(command, tmp_path),
                str(traces),
            ],
            capture_output=True,
            timeout=HANG * 2,
            check=True,
        )
        stdout = (tmp_path / "w" / "stdout").read_bytes().replace(b"/w/out/", b"/out/")
        got = _outputs(stdout, tmp_path / "w" / "out")
        assert got == _outputs(serial.stdout, tmp_path / "out")


def _one_process(command: str, folder: Path) -> list[str]:
    args = [a.replace("OUT", str(folder / "out")) for a in COMMANDS[command]]
    i = args.index("--workers")
    (folder / "out").mkdir(exist_ok=True)
    return args[:i] + args[i + 2 :]


@pytest.mark.parametrize(
    ("command", "signum"),
    [
        ("replays", signal.SIGINT),
        ("replays", signal.SIGTERM),
        ("report", signal.SIGINT),
        ("plot", signal.SIGINT),
        ("export", signal.SIGTERM),
    ],
)
def test_a_signal_ends_the_command_and_its_workers(
    traces: Path, tmp_path: Path, command: str, signum: int
) -> None:
    """Ctrl-C (SIGINT) or SIGTERM while a worker is at work: exit 128 + N, one line saying
    so, no worker left, no temporary file."""
    run = start(traces, tmp_path, command)
    run.worker_reading(BIG)
    run.proc.send_signal(signum)
    code, err = run.finish()
    name = signal.Signals(signum).name
    assert code == 128 + signum
    assert err.splitlines() == [
        f"acp-trace: interrupted by {name}{' (Ctrl-C)' if name == 'SIGINT' else ''}; "
        "stopped before the end"
    ]
    run.assert_clean()
