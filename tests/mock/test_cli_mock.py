"""`acp-trace mock` on the command line: errors before serving, the fault list, the docs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_trace.demo.faults import FAULTS
from testpaths import ROOT, SAMPLES
from tracebuilder import TraceBuilder

MOCK_FAULTS = [name for name, fault in FAULTS.items() if fault.mock]


def mock(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "acp_trace", "mock", *args]
    return subprocess.run(cmd, input=stdin.decode(), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "acp-trace: mock: Missing argument 'TRACE...'; see `acp-trace mock --help`"),
        (("--session", "nobody", str(SAMPLES / "demo-v1-load.jsonl")), "holds no session 'nobody'"),
        (("--fault", "sideways", str(SAMPLES / "demo-v1-load.jsonl")), "unknown fault 'sideways'"),
        (("--speed", "-2", str(SAMPLES / "demo-v1-load.jsonl")), "--speed -2: expected 0"),
        (("/nonexistent/trace.jsonl",), "/nonexistent/trace.jsonl: cannot be read"),
    ],
)
def test_errors_are_one_line_and_exit_2_before_serving(args: tuple[str, ...], says: str) -> None:
    """A bad recording or option: one line on stderr, exit 2, nothing on stdout."""
    done = mock(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr


def test_a_trace_without_the_agent_side_is_refused(tmp_path: Path) -> None:
    """A trace where the agent said nothing is refused with exit 2."""
    t = TraceBuilder(protocol=None)
    t.request("initialize", {"protocolVersion": 2})
    done = mock(str(t.write(tmp_path / "client-only.jsonl")))
    assert done.returncode == 2
    assert "no message from the agent" in done.stderr


def test_serving_ends_with_stdin_and_exit_0() -> None:
    """initialize answered from the recording, then exit 0 when stdin ends."""
    init = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}\n'
    done = mock("--speed", "0", str(SAMPLES / "demo-v1-load.jsonl"), stdin=init)
    assert done.returncode == 0, done.stderr
    assert '"id":7,"result":{"protocolVersion":1,' in done.stdout


def test_a_recorded_crash_exits_with_the_recorded_code() -> None:
    """The demo's crash-mid-replay recording: the mock exits 3 where the agent did."""
    lines = [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}',
        b'{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"sess_crash_mid_replay",'
        b'"cwd":"/w","replayFrom":{"type":"start"}}}',
    ]
    done = mock(
        "--speed",
        "0",
        str(SAMPLES / "demo-fault-crash-mid-replay.jsonl"),
        stdin=b"\n".join(lines) + b"\n",
    )
    assert done.returncode == 3
    assert done.stdout.count("session/update") == 5


def test_list_faults_names_every_fault_the_mock_applies() -> None:
    """--list-faults lists the mock's faults (with their arguments), no demo-only one."""
    done = mock("--list-faults")
    names = [line.split(":")[0].removesuffix("[") for line in done.stdout.splitlines()]
    assert [n.split("[")[0] for n in names] == MOCK_FAULTS
    assert "truncate:N: " in done.stdout and "crash-mid-replay[:N]: " in done.stdout
    assert "non-json-line" not in done.stdout


def test_the_docs_list_the_mock_faults() -> None:
    """docs/mock.md's fault table and the README's list name exactly the mock's faults."""
    table = (ROOT / "docs" / "mock.md").read_text()
    documented = re.findall(r"^\| `([a-z-]+)(?:\[?:N\]?)?` \|", table, flags=re.M)
    assert documented == MOCK_FAULTS
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Test your client against a recorded agent")[1].split("\n## ")[0]
    assert all(f"`{FAULTS[n].usage(n)}`" in section for n in MOCK_FAULTS)


def test_help_lists_mock_beside_record() -> None:
    """`acp-trace --help` lists mock right after record."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "--help"], capture_output=True, text=True, timeout=60
    )
    commands = re.findall(r"^  ([a-z][\w-]*) ", done.stdout, flags=re.M)
    assert commands[:2] == ["record", "mock"]
