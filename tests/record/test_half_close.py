"""Half-closes through the tap behave as with a direct pipe, and each is recorded (issue 26):
the agent closing its stdout (the client sees EOF while the agent runs on), the agent closing
its stdin (the client's writes fail with EPIPE), the client closing its end of the agent's
stdout (the agent's writes fail). Every wait is on an event, with a hang guard only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scripts.taprun import RECORD

GUARD = 120.0  # seconds: a hang guard, never a measurement


def _agent(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _tap(tmp_path: Path, code: str) -> subprocess.Popen[bytes]:
    trace = tmp_path / "t.jsonl"
    command = [*RECORD, "-o", str(trace), "--grace", "60", "--", *_agent(code)]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "t.jsonl").read_bytes().splitlines()[1:]
    return [r for r in map(json.loads, lines) if r["src"] == "tap"]


def test_the_agent_closing_its_stdout_is_eof_for_the_client_at_once(tmp_path: Path) -> None:
    """The agent closes its stdout and keeps running until a gate the test opens only after
    it saw EOF: so the client's EOF came while the agent ran; `eof` of the agent is recorded."""
    gate = tmp_path / "gate"
    code = (
        "import os, time\n"
        "os.write(1, b'{\"a\":1}\\n'); os.close(1)\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
    )
    with _tap(tmp_path, code) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.read() == b'{"a":1}\n'  # EOF, with the agent still gated
        assert proc.poll() is None
        gate.touch()
        proc.stdin.close()
        assert proc.wait(GUARD) == 0
    names = [e["event"] for e in _events(tmp_path)]
    assert names.index("eof") < names.index("exit")


def test_the_agent_closing_its_stdin_fails_the_clients_writes(tmp_path: Path) -> None:
    """The agent closes its stdin and runs on: the client's writes fail with EPIPE (as soon as
    the tap noticed, which is before it reads anything more), and a `closed` event of the
    client stream says why."""
    gate = tmp_path / "gate"
    code = (
        "import os, time\n"
        "os.close(0); os.write(1, b'ready\\n')\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
    )
    with _tap(tmp_path, code) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b"ready\n"
        deadline, failed = time.monotonic() + GUARD, False
        while not failed and time.monotonic() < deadline:
            try:
                os.write(proc.stdin.fileno(), b"{}\n")
            except BrokenPipeError:
                failed = True
            time.sleep(0.01)
        assert failed
        gate.touch()
        proc.stdin.close()
        assert proc.wait(GUARD) == 0
    (closed,) = [e for e in _events(tmp_path) if e["event"] == "closed"]
    assert closed["stream"] == "client" and "closed its stdin" in closed["reason"]


def test_the_client_closing_the_agents_stdout_fails_the_agents_writes(tmp_path: Path) -> None:
    """The client closes its end of the tap's stdout: the agent's next writes fail (EPIPE, or
    SIGPIPE for an agent that keeps the default), and a `closed` event of the agent stream says
    so. The agent exits 7 when a write failed, 0 if every write of a minute went through."""
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n"
        "os.write(1, b'ready\\n')\n"
        "end = time.monotonic() + 60\n"
        "try:\n"
        "    while time.monotonic() < end:\n"
        "        os.write(1, b'{}\\n'); time.sleep(0.01)\n"
        "except BrokenPipeError:\n"
        "    raise SystemExit(7)\n"
    )
    with _tap(tmp_path, code) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b"ready\n"
        proc.stdout.close()
        assert proc.wait(GUARD) == 7
        proc.stdin.close()
    closed = [e for e in _events(tmp_path) if e["event"] == "closed"]
    assert closed[0]["stream"] == "agent" and "closed the recorder's stdout" in closed[0]["reason"]


def test_the_clients_eof_is_recorded_before_what_the_agent_writes_after_it(
    tmp_path: Path,
) -> None:
    """The agent writes a line once it has read EOF on its stdin: the client's `eof` is in the
    trace before that line (the tap records it before it closes the agent's stdin), whatever
    the scheduling; an analysis counts what follows a client's EOF accordingly."""
    code = "import sys\nsys.stdin.buffer.read()\nsys.stdout.buffer.write(b'{\"after\":1}\\n')\n"
    for _round in range(5):
        with _tap(tmp_path, code) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            assert proc.stdout.read() == b'{"after":1}\n'
            assert proc.wait(GUARD) == 0
        records = [json.loads(r) for r in (tmp_path / "t.jsonl").read_bytes().splitlines()[1:]]
        eof = next(r["seq"] for r in records if r.get("event") == "eof" and r["stream"] == "client")
        after = next(r["seq"] for r in records if r["src"] == "agent")
        assert eof < after
