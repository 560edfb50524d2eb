"""Where a trace lands (issue 26): always 0600, never an empty file, and a warning when its
folder is open to every user."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from scripts.taprun import AGENT, RECORD, run_tap, sha


def test_a_0666_trace_replaced_by_o_is_0600(tmp_path: Path) -> None:
    """`record -o FILE` where FILE is an earlier trace with mode 0666: the new trace is 0600."""
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b"")
    trace.chmod(0o666)
    run = run_tap(tmp_path, client_sends=b'{"a":1}\n', trace=trace)
    assert run.code == 0, run.stderr
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert len(run.records) > 1


def test_a_disk_that_takes_no_header_leaves_no_empty_trace(tmp_path: Path) -> None:
    """A file size limit below the header (the disk takes nothing): forwarding goes on, the
    empty trace is removed, and stderr says why and that it was removed."""
    data = b"x\n" * 1000
    run = run_tap(tmp_path, client_sends=data, agent_sends=data, file_size_limit=100)
    assert run.code == 0
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert not (tmp_path / "trace.jsonl").exists()
    assert run.stderr.count("took not even its header") == 1


@pytest.mark.parametrize("through", ["the folder", "a symlink to it"])
def test_a_world_writable_dir_is_said_once(tmp_path: Path, through: str) -> None:
    """`record --dir D` where D (or a link to D) is writable by every user: one warning on
    stderr; the trace in it is 0600 all the same."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    where = shared
    if through == "a symlink to it":
        where = tmp_path / "link"
        where.symlink_to(shared)
    command = [*RECORD, "--dir", str(where), "--", *AGENT]
    done = subprocess.run(command, input=b"{}\n", capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().count("is writable by every user") == 1
    (trace,) = shared.iterdir()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600


def test_a_private_dir_is_not_warned_about(tmp_path: Path) -> None:
    """`record --dir D` with D 0700: no warning."""
    folder = tmp_path / "mine"
    command = [*RECORD, "--dir", str(folder), "--", *AGENT]
    done = subprocess.run(command, input=b"{}\n", capture_output=True, timeout=120)
    assert done.returncode == 0 and b"writable" not in done.stderr
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_a_record_reaches_the_file_while_the_session_is_quiet(tmp_path: Path) -> None:
    """One line, then silence: the record is in the trace file while nothing else happens
    (the agent waits for a gate the test opens only once it read the record there), so a
    reader of the file (`acp-trace watch`) sees it without more traffic to push it out. The
    writer looks at the ring at least every 50 ms (writer.MAX_WAIT)."""
    from acp_trace.record.writer import MAX_WAIT

    assert MAX_WAIT <= 0.1
    gate, trace = tmp_path / "gate", tmp_path / "trace.jsonl"
    agent = [*AGENT, "--gate", str(gate), "--ready"]
    command = [*RECORD, "-o", str(trace), "--", *agent]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b'{"ready":true}\n'
        deadline = time.monotonic() + 120  # a hang guard
        while b'"ready":true' not in trace.read_bytes():
            assert time.monotonic() < deadline, "the record never reached the file"
            time.sleep(0.01)
        gate.touch()
        proc.stdin.close()
        assert proc.wait(120) == 0
