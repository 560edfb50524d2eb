"""How `acp-trace drive` ends early: stopped by SIGINT or SIGTERM (one line, exit 128 + N, the
agent ended by the tap as an editor's exit ends it, the new trace complete up to the stop),
or by an agent that does not answer (a regression, exit 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from acp_trace.jsonrpc import loads
from clirun import Cli
from drivelib import HANG, running, wait_for


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_drive_and_its_agent(
    signum: signal.Signals, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """SIGINT or SIGTERM while drive waits for the agent: `acp-trace: interrupted by SIG...`
    on one line, exit 130 or 143, no comparison printed, the agent gone, and the trace ends
    with the tap's exit and account records."""
    agent, pid_file, new = tmp_path / "hang.py", tmp_path / "agent.pid", tmp_path / "new.jsonl"
    agent.write_text(HANG)
    drive = subprocess.Popen(
        [sys.executable, "-m", "acp_trace", "drive", "--grace", "1", "-o", str(new),
         str(recordings["v2"]), "--", sys.executable, str(agent), str(pid_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(pid_file.exists, "the agent to start")
        wait_for(lambda: b'"initialize"' in new.read_bytes(), "drive's initialize")
        drive.send_signal(signum)
        out, err = drive.communicate(timeout=300)
    finally:
        if drive.poll() is None:
            drive.kill()
    assert drive.returncode == 128 + signum
    assert err.splitlines() == [
        f"acp-trace: interrupted by {signum.name}"
        + (" (Ctrl-C)" if signum == signal.SIGINT else "")
        + "; stopped before the end"
    ]
    assert "Regressions" not in out
    pid = int(pid_file.read_text())
    wait_for(lambda: not running(pid), "the agent to end")
    events = [loads(line).get("event") for line in new.read_bytes().splitlines()[1:]]
    assert events[-2:] == ["exit", "account"]
    assert os.stat(new).st_mode & 0o777 == 0o600


def test_a_play_that_stops_early_names_what_it_did_not_send(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """An agent that never answers: the wait runs out (--timeout), the stop is a regression,
    exit 1, and the replays never asked for are named as requests never sent, not as
    `request None`."""
    agent = tmp_path / "hang.py"
    agent.write_text(HANG)
    done = cli("drive", "--timeout", "1", "--grace", "0", "-o", str(tmp_path / "new.jsonl"),
               str(recordings["v2"]), "--", sys.executable, str(agent), str(tmp_path / "pid"))  # fmt: skip
    assert done.code == 1, done.out + done.err
    assert "the run stopped: no answer to initialize (client message 1" in done.out
    assert "None" not in done.out
    assert "a recorded request never sent: session/resume on sess_new_1: replay complete" in (
        done.out
    )
