"""Running the recorder between the scripted client and agent, and checking what it left:
the harness of tests/record/test_tap.py and tests/record/test_reliability.py."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from testpaths import SCRIPTS

AGENT = [sys.executable, str(SCRIPTS / "agent.py")]
CLIENT = [sys.executable, str(SCRIPTS / "client.py")]
RECORD = [sys.executable, "-m", "acp_trace", "record"]
SECRET = "sk-live-0123456789"
LIMIT_FILE_SIZE = [
    sys.executable,
    "-c",
    "import os, resource, sys; n = int(sys.argv[1]);"
    " resource.setrlimit(resource.RLIMIT_FSIZE, (n, resource.RLIM_INFINITY));"
    " os.execv(sys.argv[2], sys.argv[2:])",
]


@cache
def validator() -> jsonschema.protocols.Validator:
    text = resources.files("acp_trace.trace").joinpath("trace-format.schema.json").read_text()
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@dataclass
class Run:
    """What one client-recorder-agent run left behind."""

    code: int
    stderr: str
    lines: list[bytes]
    agent_received: bytes
    client_received: bytes
    stderr_bytes: bytes
    records: list[dict[str, Any]] = field(default_factory=list)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("event") == name]

    def of(self, src: str) -> list[tuple[dict[str, Any], bytes]]:
        return [
            (r, raw) for r, raw in zip(self.records, self.lines[1:], strict=True) if r["src"] == src
        ]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Session:
    """A client -> `acp-trace record` -> agent chain that is running."""

    proc: subprocess.Popen[bytes]
    files: dict[str, Path]
    trace: Path

    def finish(self, *, timeout: float = 300, trace_copy: Path | None = None) -> Run:
        """Wait for the chain; parse and schema-check the trace (or its copy)."""
        try:
            _out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        trace = trace_copy or self.trace
        lines = trace.read_bytes().splitlines(keepends=True) if trace.is_file() else []
        files = self.files
        received = files["a.out"].read_bytes() if files["a.out"].exists() else b""
        sent_back = files["c.out"].read_bytes() if files["c.out"].exists() else b""
        stderr = err.decode(errors="replace")
        run = Run(self.proc.returncode, stderr, lines, received, sent_back, err)
        check_trace(run)
        return run

    def stop(self) -> None:
        """Kill the client if it still runs, reap it and close its pipes: a test that failed
        midway leaves no process and no open pipe behind (their ResourceWarnings, raised when
        the collector gets to them, would fail whichever test runs then)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def received(self) -> int:
        """Bytes the client has received so far (its file is flushed at its stdout's EOF)."""
        path = self.files["c.out"]
        return path.stat().st_size if path.exists() else 0


def start_tap(
    work: Path,
    *,
    client_sends: bytes = b"",
    agent_sends: bytes = b"",
    agent_stderr: bytes = b"",
    agent_args: tuple[str, ...] = (),
    record_args: tuple[str, ...] = (),
    client_args: tuple[str, ...] = (),
    trace: Path | None = None,
    env: dict[str, str] | None = None,
    file_size_limit: int | None = None,
    prefix: tuple[str, ...] = (),
) -> Session:
    """Start client -> `acp-trace record` -> agent (after `prefix`, e.g. a namespace with a
    small file system); the client sends `client_sends`, the agent `agent_sends`."""
    files = {name: work / name for name in ("c.in", "c.out", "a.in", "a.out", "a.err")}
    files["c.in"].write_bytes(client_sends)
    files["a.in"].write_bytes(agent_sends)
    files["a.err"].write_bytes(agent_stderr)
    trace = trace or work / "trace.jsonl"
    agent = [*AGENT, "--send", str(files["a.in"]), "--received", str(files["a.out"])]
    agent += ["--stderr", str(files["a.err"]), *agent_args]
    recorder = [*RECORD, "-o", str(trace), *record_args, "--", *agent]
    if file_size_limit is not None:
        recorder = [*LIMIT_FILE_SIZE, str(file_size_limit), *recorder]
    client = [*CLIENT, "--send", str(files["c.in"]), "--received", str(files["c.out"])]
    command = [*prefix, *client, *client_args, "--", *recorder]
    pipe = subprocess.PIPE
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, env=env)
    return Session(proc, files, trace)


def run_tap(work: Path, *, timeout: float = 300, trace_copy: Path | None = None, **how: Any) -> Run:
    """Run client -> `acp-trace record` -> agent to the end (`start_tap` says how)."""
    return start_tap(work, **how).finish(timeout=timeout, trace_copy=trace_copy)


def check_trace(run: Run) -> None:
    """Every line is whole, JSON and valid v1; seq counts 1, 2, 3...; t_ns follows seq.

    The schema checks the header and the first line of every shape (source, keys, event);
    schema validation costs milliseconds a line, and a trace of the suite has 100k lines.
    """
    shapes: set[tuple[Any, ...]] = set()
    for number, line in enumerate(run.lines, 1):
        assert line.endswith(b"\n"), f"line {number} is cut"
        value = json.loads(line)
        assert isinstance(value, dict), f"line {number}"
        shape = (value.get("src"), tuple(sorted(value)), value.get("event"))
        if shape not in shapes:
            shapes.add(shape)
            validator().validate(value)
        if number > 1:
            run.records.append(value)
    assert [r["seq"] for r in run.records] == list(range(1, len(run.records) + 1))
    times = [r["t_ns"] for r in run.records]
    assert times == sorted(times)


def expected_lines(sent: bytes) -> list[tuple[bytes, bool]]:
    """The lines a stream consists of, each with whether a newline ended it."""
    parts = sent.split(b"\n")
    last = parts.pop()
    return [(p, True) for p in parts] + ([(last, False)] if last else [])


def assert_recorded(run: Run, src: str, sent: bytes, *, drops: bool = False) -> int:
    """The records of `src` are the lines of `sent`, in order, each as its payload rule says;
    with `drops`, a `dropped` event of the stream may stand for that many lines. The number
    of lines dropped."""
    expected = expected_lines(sent)
    at = dropped = 0
    for rec, raw in zip(run.records, run.lines[1:], strict=True):
        if rec["src"] == "tap" and rec.get("event") == "dropped" and rec.get("stream") == src:
            assert drops, f"{src}: {rec}"
            at, dropped = at + rec["count"], dropped + rec["count"]
            continue
        if rec["src"] != src:
            continue
        assert at < len(expected), f"{src}: more records than lines (seq {rec['seq']})"
        line, eol = expected[at]
        assert rec.get("eol", True) is eol, f"seq {rec['seq']}"
        assert_payload(rec, raw, line)
        at += 1
    assert at == len(expected), f"{src}: {at} of {len(expected)} lines recorded or dropped"
    return dropped


def assert_payload(rec: dict[str, Any], raw: bytes, line: bytes) -> None:
    """A record's payload holds `line` (its first `bytes` when it was cut), or stands for it
    (a line that may hold a secret and cannot be redacted exactly: test_redact.py)."""
    if "redaction" in rec:
        assert rec["text"] == f"<redacted: {len(line)} bytes>" and rec["bytes"] == len(line)
    elif rec.get("truncated"):
        assert rec["bytes"] == len(line)
        kept = rec["text"].encode() if "text" in rec else base64.b64decode(rec["b64"])
        assert line.startswith(kept)
    elif "msg" in rec:
        spliced = raw[raw.index(b',"msg":') + 7 : raw.rstrip().rindex(b"}")]
        assert spliced == line.strip(b" \t\r")
    elif "text" in rec:
        assert rec["text"].encode() == line
    else:
        assert base64.b64decode(rec["b64"]) == line


def assert_account(run: Run, src: str, sent: bytes, *, written: bool = True) -> None:
    """The trace ends with an `account` event whose numbers for `src` are the lines of `sent`,
    the records and `dropped` events of the trace, and (with `written`) nothing unwritten."""
    assert run.records and run.records[-1].get("event") == "account", "no account at the end"
    counts = run.records[-1]["streams"][src]
    records = len(run.of(src))
    dropped = sum(e["count"] for e in run.events("dropped") if e.get("stream") == src)
    assert counts["lines"] == len(expected_lines(sent)), f"{src}: {counts}"
    assert counts["recorded"] == records and counts["dropped"] == dropped, f"{src}: {counts}"
    assert counts["recorded"] + counts["dropped"] + counts["unwritten"] == counts["lines"]
    assert (counts["unwritten"] == 0) is written, f"{src}: {counts}"


def assert_transparent(
    run: Run, client_sends: bytes, agent_sends: bytes, *, drops: bool = False
) -> None:
    """Both directions arrive byte for byte, and both streams are recorded line by line (with
    `drops`: or counted in `dropped` events, which the recorder may need on a busy machine)."""
    assert sha(run.agent_received) == sha(client_sends)
    assert sha(run.client_received) == sha(agent_sends)
    if not drops:
        assert run.events("dropped") == []
    assert_recorded(run, "client", client_sends, drops=drops)
    assert_recorded(run, "agent", agent_sends, drops=drops)
    assert_account(run, "client", client_sends)
    assert_account(run, "agent", agent_sends)


def children(pid: int) -> list[int]:
    """The live (not zombie) child processes of `pid`, from /proc."""
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
