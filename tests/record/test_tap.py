"""The recorder (`acp-trace record`) between a scripted client and a scripted agent."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_trace.record import tap, trace_file
from scripts.taprun import (
    AGENT,
    RECORD,
    SECRET,
    assert_account,
    assert_recorded,
    assert_transparent,
    run_tap,
    sha,
    start_tap,
)

MIXED = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}\n'
    b'  {"jsonrpc":"2.0","id":"a","result":null}\r\n'
    b"\n"
    b"plain text \xc3\xa9\r\n"
    b"\xff\xfe not utf-8\n"
    b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]\n'
    b"\r\n"
    b'{"jsonrpc":"2.0","method":"cut"'
)


def test_forwarding_is_byte_identical_and_every_line_is_recorded(tmp_path: Path) -> None:
    """JSON, CRLF, blank, non-UTF-8, batch and unterminated lines pass unchanged, all recorded."""
    stderr = b"log line\n\xff raw\n"
    run = run_tap(tmp_path, client_sends=MIXED, agent_sends=MIXED[::-1], agent_stderr=stderr)
    assert run.code == 0
    assert_transparent(run, MIXED, MIXED[::-1])
    assert_recorded(run, "stderr", stderr + b"agent: stdin closed\n")
    assert run.stderr_bytes == stderr + b"agent: stdin closed\n"
    assert all("msg" not in rec for rec, _ in run.of("stderr"))
    assert {e["stream"] for e in run.events("eof")} == {"client", "agent"}
    assert run.events("exit") == [run.records[-2]]
    assert run.events("account") == [run.records[-1]]
    assert run.records[-2] | {"seq": 0, "t_ns": 0} == {
        "seq": 0, "t_ns": 0, "src": "tap", "event": "exit", "code": 0, "signal": None
    }  # fmt: skip


def test_header_names_the_agent_and_the_recorder(tmp_path: Path) -> None:
    """The header has the format version, start time, argv, cwd, agent pid and recorder version."""
    run = run_tap(tmp_path, client_sends=b"x\n")
    head = json.loads(run.lines[0])
    assert head["acp_trace"] == 1 and head["kind"] == "header"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", head["started_at"])
    assert head["command"][:2] == AGENT and head["cwd"] == os.getcwd()
    assert isinstance(head["pid"], int) and head["recorder"].startswith("acp-trace ")
    assert head["redaction"]["policy"] == "acp-secrets/4"


@pytest.mark.parametrize(
    ("name", "stream", "kind"),
    [
        ("last line without newline", b'{"a":1}\nno newline at the end', "text"),
        ("CRLF line", b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n', "msg"),
        ("CRLF text", b"hello\r\n", "text"),
        ("invalid UTF-8", b"\x80\x81\xfe\n", "b64"),
        ("empty lines", b"\n\n\n", "text"),
    ],
)
def test_awkward_lines_are_forwarded_and_recorded(
    tmp_path: Path, name: str, stream: bytes, kind: str
) -> None:
    """Each awkward kind of line reaches the other side unchanged and is recorded as expected."""
    run = run_tap(tmp_path, client_sends=stream, agent_sends=stream)
    assert_transparent(run, stream, stream)
    assert kind in run.of("agent")[-1][0], name


def test_a_64_mib_line_is_forwarded_and_recorded_whole(tmp_path: Path) -> None:
    """A JSON line of exactly 64 MiB (the default --max-record-bytes) passes both ways and is
    recorded whole (with a queue that holds both)."""
    head, tail = b'{"jsonrpc":"2.0","method":"big","params":{"data":"', b'"}}'
    blob = head + b"x" * ((64 << 20) - len(head) - len(tail)) + tail + b"\n"
    queue = ("--queue-bytes", str(256 << 20))  # both lines fit: nothing may be dropped
    run = run_tap(tmp_path, client_sends=blob, agent_sends=blob, record_args=queue)
    assert_transparent(run, blob, blob)
    assert len(run.lines[1]) > 64 << 20
    assert json.loads(run.lines[0])["max_record_bytes"] == 64 << 20


@pytest.mark.parametrize("eol", [True, False])
def test_max_record_bytes_cuts_only_the_recorded_copy(tmp_path: Path, eol: bool) -> None:
    """With --max-record-bytes a longer line (here spanning many reads) is recorded cut,
    marked truncated with its real length, and forwarded whole; with or without a newline."""
    line = b'{"jsonrpc":"2.0","method":"long","params":{"text":"' + b"y" * 500_000 + b'"}}'
    sent = line + (b"\n" if eol else b"")
    run = run_tap(tmp_path, client_sends=sent, record_args=("--max-record-bytes", "100"))
    assert sha(run.agent_received) == sha(sent)
    rec = run.of("client")[0][0]
    assert rec["truncated"] is True and rec["bytes"] == len(line)
    assert rec["text"] == line[:100].decode()
    assert rec.get("eol", True) is eol
    assert json.loads(run.lines[0])["max_record_bytes"] == 100


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
stream_lines = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.text(max_size=50).map(lambda t: t.replace("\n", "").encode() + b"\r"),
)
streams = st.tuples(st.lists(stream_lines, max_size=30), st.booleans()).map(
    lambda pair: b"\n".join(pair[0]) + (b"\n" if pair[1] and pair[0] else b"")
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(client_sends=streams, agent_sends=streams)
def test_random_streams_pass_unchanged_and_are_recorded(
    client_sends: bytes, agent_sends: bytes
) -> None:
    """Random streams of bytes, text and JSON lines arrive unchanged and are recorded by line."""
    with tempfile.TemporaryDirectory() as work:
        run = run_tap(Path(work), client_sends=client_sends, agent_sends=agent_sends)
    assert run.code == 0
    assert_transparent(run, client_sends, agent_sends)


def test_agent_crashing_mid_stream_gives_its_exit_code(tmp_path: Path) -> None:
    """An agent that dies after part of its output: the part is forwarded, its code returned."""
    data = b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}\n'
    agent_args = ("--crash-after", "40", "--exit", "7")
    run = run_tap(tmp_path, client_sends=data * 1000, agent_sends=data, agent_args=agent_args)
    assert run.code == 7
    assert run.client_received == data[:40]
    assert run.events("exit")[0] | {"seq": 0, "t_ns": 0} == {
        "seq": 0, "t_ns": 0, "src": "tap", "event": "exit", "code": 7, "signal": None
    }  # fmt: skip
    assert run.of("agent")[-1][0] == run.of("agent")[-1][0] | {"eol": False}


def test_agent_exit_code_2_is_the_agents_not_an_error(tmp_path: Path) -> None:
    """An agent exiting 2 makes the recorder exit 2 without any message of its own."""
    run = run_tap(tmp_path, agent_args=("--exit", "2"))
    assert run.code == 2
    assert "acp-trace:" not in run.stderr


def test_signal_killed_agent_gives_128_plus_n(tmp_path: Path) -> None:
    """An agent killed by signal N makes the recorder exit 128+N and records the signal."""
    run = run_tap(tmp_path, client_sends=b"hi\n", agent_args=("--kill-self", str(signal.SIGKILL)))
    assert run.code == 128 + signal.SIGKILL
    exit_event = run.events("exit")[0]
    assert exit_event["code"] is None and exit_event["signal"] == signal.SIGKILL


def test_a_session_stopped_midway_leaves_no_process_and_no_open_pipe(tmp_path: Path) -> None:
    """A test that fails while the chain runs stops it: the client is reaped and its pipes are
    closed (left to the collector, their ResourceWarnings failed whichever test ran then)."""
    session = start_tap(tmp_path, agent_args=("--gate", str(tmp_path / "never")))
    session.stop()
    assert session.proc.returncode is not None
    assert session.proc.stdout is not None and session.proc.stdout.closed
    assert session.proc.stderr is not None and session.proc.stderr.closed


def test_client_eof_closes_agent_stdin_and_is_recorded(tmp_path: Path) -> None:
    """When the client closes stdin the agent sees EOF, and the eof (client) event is recorded."""
    run = run_tap(tmp_path, client_sends=b"last words\n")
    assert run.agent_received == b"last words\n"
    eof = run.events("eof")
    client_eof = next(e for e in eof if e["stream"] == "client")
    said = next(rec for rec, _ in run.of("stderr") if rec.get("text") == "agent: stdin closed")
    assert client_eof["seq"] < said["seq"]


def test_agent_ignoring_eof_is_terminated_after_the_grace_period(tmp_path: Path) -> None:
    """An agent that stays after the client's EOF gets SIGTERM once the grace period is over."""
    run = run_tap(tmp_path, agent_args=("--ignore-eof",), record_args=("--grace", "0.3"))
    assert run.code == 128 + signal.SIGTERM
    assert [e["signal"] for e in run.events("kill")] == [signal.SIGTERM]
    assert run.events("exit")[0]["signal"] == signal.SIGTERM


def test_agent_ignoring_sigterm_too_is_killed(tmp_path: Path) -> None:
    """An agent that ignores EOF and SIGTERM is ended with SIGKILL."""
    agent_args = ("--ready", "--ignore-eof", "--ignore-term")
    client_args = ("--close-on-ready",)  # the agent ignores SIGTERM by then
    run = run_tap(
        tmp_path, agent_args=agent_args, record_args=("--grace", "0.3"), client_args=client_args
    )
    assert run.code == 128 + signal.SIGKILL
    assert [e["signal"] for e in run.events("kill")] == [signal.SIGTERM, signal.SIGKILL]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_to_the_recorder_are_forwarded_to_the_agent(tmp_path: Path, signum: int) -> None:
    """SIGTERM, SIGINT and SIGHUP sent to the recorder reach the agent; the exit code says so."""
    run = run_tap(
        tmp_path,
        agent_args=("--ready",),
        client_args=("--keep-open", "--signal-on-ready", str(signum)),
    )
    assert run.code == 128 + signum
    assert run.client_received == b'{"ready":true}\n'
    assert run.events("exit")[0]["signal"] == signum
    assert run.events("kill") == []


def test_a_full_disk_never_stops_forwarding(tmp_path: Path) -> None:
    """With -o /dev/full every byte is still forwarded and the failure is reported exactly once."""
    data = b'{"jsonrpc":"2.0","method":"x"}\n' * 2000
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full here")
    run = run_tap(tmp_path, client_sends=data, agent_sends=data, trace=full)
    assert run.code == 0
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("acp-trace: cannot write the trace /dev/full") == 1
    assert stat.S_ISCHR(full.stat().st_mode) and full.stat().st_mode & 0o666 == 0o666


def test_a_file_size_limit_leaves_a_valid_trace_ending_with_an_error(tmp_path: Path) -> None:
    """Under a file size limit (RLIMIT_FSIZE) forwarding goes on, the trace holds whole records
    only and ends with an `error` event that names the limit, and stderr says it once."""
    data = b'{"jsonrpc":"2.0","method":"x","params":{"n":12345}}\n' * 2000
    run = run_tap(tmp_path, client_sends=data, agent_sends=data, file_size_limit=16384)
    assert run.code == 0
    assert sha(run.agent_received) == sha(data) and sha(run.client_received) == sha(data)
    assert run.stderr.count("acp-trace: cannot write the trace") == 1
    assert "file size limit of 16384 bytes (RLIMIT_FSIZE)" in run.stderr
    assert (tmp_path / "trace.jsonl").stat().st_size <= 16384
    assert len(run.records) > 10
    last = run.records[-2]
    assert last["event"] == "error" and "RLIMIT_FSIZE" in last["message"]
    assert_account(run, "client", data, written=False)


def test_redaction_changes_the_record_not_the_traffic(tmp_path: Path) -> None:
    """Secrets in session/new and authenticate are forwarded as sent but recorded as <redacted>."""
    stdio = {"name": "gh", "command": "gh-mcp", "args": [], "env": [{"name": "T", "value": SECRET}]}
    http = {
        "type": "http",
        "name": "w",
        "url": "https://x",
        "headers": [{"name": "A", "value": SECRET}],
    }
    params = {"cwd": "/w", "mcpServers": [stdio, http]}
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": params}
    auth = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "authenticate",
        "params": {"methodId": "key", "apiKey": SECRET},
    }
    sent = (json.dumps(new) + "\n" + json.dumps(auth) + "\n").encode()
    run = run_tap(tmp_path, client_sends=sent)
    assert sha(run.agent_received) == sha(sent)
    assert SECRET.encode() not in b"".join(run.lines)
    (first, _), (second, _) = run.of("client")
    assert first["redacted"] == [
        "$.params.mcpServers[0].env[0].value",
        "$.params.mcpServers[1].headers[0].value",
    ]
    assert first["msg"]["params"]["mcpServers"][0]["env"][0] == {
        "name": "T",
        "value": "<redacted>",
    }
    assert second["msg"]["params"] == {"methodId": "key", "apiKey": "<redacted>"}
    assert json.loads(run.lines[0])["redaction"]["replacement"] == "<redacted>"


def test_no_redact_records_secrets(tmp_path: Path) -> None:
    """With --no-redact the recorded copy keeps secrets and the header says there is no policy."""
    line = (
        b'{"jsonrpc":"2.0","id":2,"method":"auth/login","params":{"methodId":"k","token":"%s"}}\n'
    )
    sent = line % SECRET.encode()
    run = run_tap(tmp_path, client_sends=sent, record_args=("--no-redact",))
    assert run.of("client")[0][1].endswith(sent.rstrip(b"\n") + b"}\n")
    assert json.loads(run.lines[0])["redaction"] == {"policy": "none"}


HEADER = b'{"acp_trace":1,"kind":"header","started_at":"2026-11-30T10:11:06.123456Z"}\n'


def test_trace_files_are_private(tmp_path: Path) -> None:
    """A new trace is created 0600; an earlier trace given to -o is replaced by a new 0600
    file (never rewritten in place: a hard link to the old one keeps the old content)."""
    fresh = tmp_path / "fresh.jsonl"
    run_tap(tmp_path, trace=fresh)
    existing = tmp_path / "existing.jsonl"
    existing.write_bytes(HEADER + b'{"seq":1,"t_ns":0,"src":"client","text":"old content"}\n')
    existing.chmod(0o644)
    os.link(existing, tmp_path / "hardlink.jsonl")
    run = run_tap(tmp_path, trace=existing, client_sends=b"x\n")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600
    assert b"old content" not in b"".join(run.lines)
    assert b"old content" in (tmp_path / "hardlink.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def record_into_dir(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    command = [*RECORD, *args, "--", *AGENT]
    return subprocess.run(command, input=b"", capture_output=True, env=env, timeout=120)


NAME = re.compile(r"\d{8}T\d{6}\.\d{3}Z-agent\.jsonl")


def test_dir_names_the_trace_by_time_and_agent(tmp_path: Path) -> None:
    """--dir creates missing directories 0700 and names the trace TIMESTAMP-AGENT.jsonl, 0600."""
    folder = tmp_path / "a" / "traces"
    done = record_into_dir(tmp_path, ["--dir", str(folder)], dict(os.environ))
    assert done.returncode == 0, done.stderr
    (trace,) = folder.iterdir()
    assert NAME.fullmatch(trace.name)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600


def test_dir_expands_the_tilde(tmp_path: Path) -> None:
    """`--dir ~/traces` means the home directory's traces (editors pass arguments unexpanded)."""
    env = dict(os.environ, HOME=str(tmp_path))
    done = record_into_dir(tmp_path, ["--dir", "~/traces"], env)
    assert done.returncode == 0, done.stderr
    assert [NAME.fullmatch(p.name) is not None for p in (tmp_path / "traces").iterdir()] == [True]


@pytest.mark.parametrize("variable", ["ACP_TRACE_DIR", "XDG_STATE_HOME"])
def test_trace_directory_comes_from_the_environment(tmp_path: Path, variable: str) -> None:
    """Without -o or --dir, $ACP_TRACE_DIR is used, else $XDG_STATE_HOME/acp-trace/traces."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACP_TRACE_DIR", "XDG_STATE_HOME")}
    env[variable] = str(tmp_path / "state")
    done = record_into_dir(tmp_path, [], env)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "state"
    if variable == "XDG_STATE_HOME":
        folder = folder / "acp-trace" / "traces"
    assert [NAME.fullmatch(p.name) is not None for p in folder.iterdir()] == [True]


def test_agent_not_found_is_an_error_with_exit_2(tmp_path: Path) -> None:
    """A missing agent: `cannot start AGENT`, exit 2, no new trace and an old one untouched."""
    trace = tmp_path / "t.jsonl"
    command = [*RECORD, "-o", str(trace), "--", "no-such-agent-xyz", "--acp"]
    done = subprocess.run(command, input=b"", capture_output=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("acp-trace: cannot start no-such-agent-xyz: ")
    assert not trace.exists()
    trace.write_bytes(HEADER)
    done = subprocess.run(command, input=b"", capture_output=True, timeout=60)
    assert done.returncode == 2
    assert trace.read_bytes() == HEADER
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


# ---------------------------------------------------------------- units


@pytest.mark.parametrize(("returncode", "code"), [(0, 0), (2, 2), (-15, 143), (-9, 137)])
def test_exit_code_follows_the_shell_convention(returncode: int, code: int) -> None:
    """A normal exit keeps its code; death by signal N gives 128+N."""
    assert tap.exit_code(returncode) == code


def test_trace_file_name_uses_utc_milliseconds_and_the_agent_name() -> None:
    """The name is the UTC start time to the millisecond plus the agent's name."""
    from datetime import UTC, datetime

    when = datetime(2026, 11, 30, 10, 11, 6, 123456, tzinfo=UTC)
    assert (
        trace_file.trace_file_name(["npx", "codex-acp"], when)
        == "20261130T101106.123Z-codex-acp.jsonl"
    )
    assert (
        trace_file.trace_file_name(["/bin/my agent"], when) == "20261130T101106.123Z-my_agent.jsonl"
    )
