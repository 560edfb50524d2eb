"""`acp-trace mock` driven over real pipes by a client that misbehaves: signals mid-replay, a
client that goes away with requests queued, a recording whose clock jumps years, numeric
options no wait can honour, and ids holding lone surrogates."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_trace.jsonrpc import loads
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

LOAD = SAMPLES / "demo-v1-load.jsonl"  # 200 turns of history and a prompt, session sess_v1_load
HANG_GUARD = 60  # seconds: only against a hang; every case ends in well under one


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


INIT = line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})


def load(rid: int) -> bytes:
    params = {"sessionId": "sess_v1_load", "cwd": "/home/user/project", "mcpServers": []}
    return line({"jsonrpc": "2.0", "id": rid, "method": "session/load", "params": params})


def start(*args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "acp_trace", "mock", *args]
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def read_until(proc: subprocess.Popen[bytes], wanted: bytes) -> bytes:
    """What the mock wrote up to and including the first line holding `wanted`."""
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + HANG_GUARD
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {wanted!r} from the mock; it wrote {seen[-300:]!r}"
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            assert chunk, f"the mock ended before {wanted!r}: {seen[-300:]!r}"
            seen += chunk
    return seen


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """The exit code and stderr of a mock expected to end by itself now."""
    for name in ("stdin", "stdout"):
        stream = getattr(proc, name)
        if stream is not None and stream.closed:
            setattr(proc, name, None)  # closed by the test: nothing for communicate to do
    try:
        _, err = proc.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the mock did not end: {err.decode(errors='replace')[-500:]}")
    return proc.returncode, err.decode(errors="replace")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_mid_replay_ends_the_mock_at_once_with_128_plus_n(signum: int) -> None:
    """A signal while the mock waits in a replay (here the hour of `--gap 3600`) ends it with
    exit 128 + N, without Python's fatal error about the thread that reads stdin."""
    proc = start("--speed", "0", "--gap", "3600", str(LOAD))
    assert proc.stdin is not None
    proc.stdin.write(INIT + load(1))
    proc.stdin.flush()
    read_until(proc, b'"sessionUpdate"')  # the replay has begun
    proc.send_signal(signum)
    code, err = finish(proc)
    assert code == 128 + signum, err
    assert "Fatal Python error" not in err and "Traceback" not in err


def test_a_client_that_goes_away_stops_the_mock_at_once() -> None:
    """A client that queued 10,000 loads and closed both pipes: the mock stops replaying into
    the closed pipe and ends (before, it replayed every one of them, minutes of CPU)."""
    proc = start("--speed", "0", str(LOAD))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT + b"".join(load(i) for i in range(1, 10_001)))
    proc.stdin.close()
    read_until(proc, b'"sessionUpdate"')
    proc.stdout.close()
    code, err = finish(proc)
    assert code == 0, err
    assert "the client stopped reading" in err


def test_a_client_gone_while_the_mock_sleeps_out_a_clock_jump_ends_it(tmp_path: Path) -> None:
    """A recording whose clock jumps three years inside a replay: the mock waits at speed 1,
    but no longer once its client has closed both pipes."""
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "first"})
    b.t_ns += 3 * 365 * 86_400 * 10**9
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "years later"})
    b.response(rid, None)
    proc = start(str(b.write(tmp_path / "jump.jsonl")))
    assert proc.stdin is not None and proc.stdout is not None
    params = {"sessionId": "s", "cwd": "/tmp", "mcpServers": []}
    request = {"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": params}
    proc.stdin.write(INIT + line(request))
    proc.stdin.close()
    read_until(proc, b'"first"')
    proc.stdout.close()
    code, err = finish(proc)
    assert code == 0, err


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--speed", "1e-300", "--speed 1e-300: expected 0 (no waiting) or a factor from 1e-06"),
        ("--speed", "5e-324", "--speed 4.94066e-324: expected 0"),
        ("--speed", "nan", "--speed nan: expected 0"),
        ("--speed", "inf", "--speed inf: expected 0"),
        ("--speed", "1e7", "--speed 1e+07: expected 0"),
        ("--answer-timeout", "1e300", "--answer-timeout 1e+300: expected seconds above 0"),
        ("--answer-timeout", "nan", "--answer-timeout nan: expected seconds above 0"),
        ("--answer-timeout", "0", "--answer-timeout 0: expected seconds above 0"),
    ],
)
def test_numbers_no_wait_can_honour_are_refused_in_one_line(
    option: str, value: str, says: str
) -> None:
    """Speeds and timeouts out of range: one line, exit 2, before the recording is served."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "mock", option, value, str(LOAD)],
        input=INIT,
        capture_output=True,
        timeout=HANG_GUARD,
    )
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (2, b"")
    assert err.count("\n") == 1 and says in err, err


def test_an_answer_timeout_of_inf_is_honoured() -> None:
    """`--answer-timeout inf` (wait as long as the client is there) serves as usual:
    initialize is answered, and stdin's end ends the mock with 0."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "mock", "--answer-timeout", "inf", str(LOAD)],
        input=INIT,
        capture_output=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b'"id":0,"result":{"protocolVersion":1' in done.stdout


def test_the_slowest_speed_waits_until_the_client_is_gone() -> None:
    """At `--speed 1e-6` the recorded 11 ms before initialize's answer take three hours: the
    mock waits (no overflow of the wait), and ends with 0 once its client closed both pipes."""
    proc = start("--speed", "1e-6", str(LOAD))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.close()
    time.sleep(1)  # not a synchronization: the mock is waiting either way
    assert proc.poll() is None
    proc.stdout.close()
    code, err = finish(proc)
    assert code == 0, err
    assert "Traceback" not in err


def test_an_id_with_a_lone_surrogate_is_answered_and_so_is_the_next_request() -> None:
    """JSON.stringify writes a cut emoji as a lone surrogate escape: the mock answers with the
    id as sent (escaped), and goes on answering."""
    weird = (
        b'{"jsonrpc":"2.0","id":"x\\ud83d","method":"initialize","params":{"protocolVersion":1}}'
    )
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "mock", "--speed", "0", str(LOAD)],
        input=weird + b"\n" + INIT,
        capture_output=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [loads(x) for x in done.stdout.splitlines() if x.strip()]
    assert [a["id"] for a in answers] == ["x\ud83d", 0]
    assert b'"id":"x\\ud83d"' in done.stdout  # the escape, as the client wrote it
