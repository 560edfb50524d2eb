"""The remote recorder's options are checked before anything starts: a bad address or URL,
a port in use, an agent command or --redact-stderr beside --listen: one line, exit 2, no trace."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from remotelib import env

from acp_trace.errors import UsageError
from acp_trace.remote.options import parse_listen, parse_upstream


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("http://127.0.0.1:8080/acp", "http://127.0.0.1:8080"),
        ("ws://agent.example/acp", "http://agent.example"),
        ("wss://agent.example:9443/acp?x=1", "https://agent.example:9443"),
        ("https://[::1]:9/acp", "https://[::1]:9"),
    ],
)
def test_an_upstream_url_gives_the_origin_requests_go_to(text: str, origin: str) -> None:
    """ws and wss URLs name the same origin over http and https (the WebSocket upgrade is an
    HTTP request); the path stays the client's."""
    assert parse_upstream(text).origin == origin


@pytest.mark.parametrize("text", ["agent:8080", "ftp://h/acp", "http:///acp", "http://h:99999/"])
def test_a_bad_upstream_is_refused(text: str) -> None:
    """No scheme, another scheme, no host, a port out of range."""
    with pytest.raises(UsageError):
        parse_upstream(text)


@pytest.mark.parametrize("text", ["8080", "localhost", ":80", "h:port", "h:70000"])
def test_a_bad_listen_address_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_listen(text)


def test_ipv6_listen_address() -> None:
    assert parse_listen("[::1]:0") == ("::1", 0)


def _record(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "acp_trace", "record", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env(), cwd=cwd)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--listen", "127.0.0.1:0", "--upstream", "ftp://x/"], "--upstream 'ftp://x/'"),
        (["--listen", "nowhere", "--upstream", "http://h/"], "--listen 'nowhere'"),
        (["--upstream", "http://h/"], "needs both --listen"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://h/", "--", "agent"], "agent command"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://h/", "--redact-stderr", "x"], "stderr"),
        ([], "needs an agent"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    done = _record(*args, "-o", str(tmp_path / "t.jsonl"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The port is bound before the trace is opened: nothing is left behind."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _record(
            "--listen", f"127.0.0.1:{port}", "--upstream", "http://127.0.0.1:9/acp",
            "-o", str(tmp_path / "t.jsonl"), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr
        == f"acp-trace: --listen 127.0.0.1:{port}: cannot listen (Address already in use)\n"
    )
    assert not (tmp_path / "t.jsonl").exists()


def test_a_refused_trace_frees_the_port(tmp_path: Path) -> None:
    """`-o` naming a directory is refused with one line and exit 2 (the tap's rule), and the
    port bound before it is let go."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = _record(
        "--listen", f"127.0.0.1:{port}", "--upstream", "http://127.0.0.1:9/acp",
        "-o", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    with socket.create_server(("127.0.0.1", port)):
        pass
