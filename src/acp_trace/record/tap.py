"""The recorder behind `acp-trace record`: a tap between an editor and an ACP agent.

Three pump threads forward client stdin to the agent, the agent's stdout to the client and
its stderr to ours, chunk by chunk as `os.read` returns (no line buffering, no limit, no
re-encoding). Each chunk that completes lines is stamped first (seq and t_ns under one lock),
then forwarded. Stamped lines go to a queue bounded by bytes; a writer thread encodes them
(redaction included) and writes the trace, so a slow or full disk never delays the traffic.
The write path is in trace_writer.py, the trace file's name and creation in trace_file.py.
The main thread runs the agent in its own session, forwards SIGINT/SIGTERM/SIGHUP to its
process group and ends it when it outlives the client. docs/trace-format.md has the format.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from acp_trace import __version__
from acp_trace.errors import RecordError
from acp_trace.record.options import RecordOptions, RecordResult
from acp_trace.record.redact import RedactionPolicy, Redactor, redact_command
from acp_trace.record.trace_file import create_trace
from acp_trace.record.writer import ByteQueue, Stamper, TraceWriter, encode_item
from acp_trace.trace.format import encode_header

READ_SIZE = 64 << 10
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# ---------------------------------------------------------------- forwarding


def split_lines(pending: bytearray, chunk: bytes) -> list[bytes]:
    """The lines (without `\\n`) that `chunk` completes; the rest stays in `pending`."""
    if b"\n" not in chunk:
        pending += chunk
        return []
    parts = chunk.split(b"\n")
    first = bytes(pending) + parts[0]
    pending[:] = parts[-1]
    return [first, *parts[1:-1]]


def pump(source: int, sink: int, src: str, stamper: Stamper) -> None:
    """Forward `source` to `sink` as bytes arrive, stamping each line before forwarding it."""
    pending = bytearray()
    sink_open = True
    while chunk := _read(source, src, stamper):
        lines = split_lines(pending, chunk)
        if lines:
            stamper.lines(src, lines)
        if sink_open:
            sink_open = _forward(sink, chunk, src, stamper)
    if pending:
        stamper.lines(src, [bytes(pending)], eol=False)


def _read(source: int, src: str, stamper: Stamper) -> bytes:
    try:
        return os.read(source, READ_SIZE)
    except OSError as exc:
        stamper.event("error", message=f"cannot read the {src} stream: {exc.strerror or exc}")
        return b""


def _forward(sink: int, chunk: bytes, src: str, stamper: Stamper) -> bool:
    """Write all of `chunk`; on failure record it once and stop forwarding this stream."""
    view = memoryview(chunk)
    try:
        while view:
            view = view[os.write(sink, view) :]
    except OSError as exc:
        message = f"cannot forward the {src} stream: {exc.strerror or exc}"
        stamper.event("error", message=message)
        return False
    return True


# ---------------------------------------------------------------- the agent


def spawn(command: list[str]) -> subprocess.Popen[bytes]:
    """Start the agent in its own session (its own process group), all three stdio piped."""
    pipe = subprocess.PIPE
    try:
        return subprocess.Popen(
            command, stdin=pipe, stdout=pipe, stderr=pipe, bufsize=0, start_new_session=True
        )
    except OSError as exc:
        raise RecordError(f"cannot start {command[0]}: {exc.strerror or exc}") from exc


def exit_code(returncode: int) -> int:
    """A shell's exit code for a child's return code: 128+N after signal N."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class _Tap:
    """One recording: the agent, the threads, and the end of the session."""

    options: RecordOptions
    writer: TraceWriter
    stamper: Stamper
    proc: subprocess.Popen[bytes] | None = None
    client_eof: threading.Event = field(default_factory=threading.Event)
    early_signals: list[int] = field(default_factory=list)

    def run(self, stdin_fd: int, stdout_fd: int, stderr_fd: int) -> int:
        with self._forwarding_signals():
            started_at = self.stamper.start()
            self.proc = proc = spawn(self.options.command)
            self.writer.start(encode_header(self._header(started_at, proc.pid)))
            assert proc.stdin and proc.stdout and proc.stderr
            self._thread("client", self._client, stdin_fd, proc.stdin.fileno())
            drains = [
                self._thread("agent", self._agent, proc.stdout.fileno(), stdout_fd),
                self._thread(
                    "stderr", pump, proc.stderr.fileno(), stderr_fd, "stderr", self.stamper
                ),
            ]
            for signum in self.early_signals:
                self._signal(signum)
            returncode = self._supervise(proc)
            self._drain(drains)
            sig = -returncode if returncode < 0 else None
            self.stamper.event("exit", code=returncode if sig is None else None, signal=sig)
            _close_for_reader(stdout_fd)
            self.writer.close()
        return exit_code(returncode)

    def _header(self, started_at: str, pid: int) -> dict[str, Any]:
        command, redacted = self.options.command, list[str]()
        if self.options.redact:
            command, redacted = redact_command(command)
        return (
            {
                "started_at": started_at,
                "command": command,
                "cwd": os.getcwd(),
                "pid": pid,
                "recorder": f"acp-trace {__version__}",
                "redaction": _policy(self.options).header(),
            }
            | ({"redacted": redacted} if redacted else {})
            | self._limits()
        )

    def _limits(self) -> dict[str, Any]:
        limit = self.options.max_record_bytes
        return {} if limit is None else {"max_record_bytes": limit}

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread

    def _client(self, source: int, sink: int) -> None:
        """Client to agent; at the client's EOF close the agent's stdin and start the grace."""
        pump(source, sink, "client", self.stamper)
        assert self.proc is not None and self.proc.stdin is not None
        with suppress(OSError):
            self.proc.stdin.close()
        self.stamper.event("eof", stream="client")
        self.client_eof.set()

    def _agent(self, source: int, sink: int) -> None:
        pump(source, sink, "agent", self.stamper)
        self.stamper.event("eof", stream="agent")

    def _supervise(self, proc: subprocess.Popen[bytes]) -> int:
        """Wait for the agent; once the client is gone, end it after the grace period."""
        deadline: float | None = None
        escalation = [signal.SIGTERM, signal.SIGKILL]
        while True:
            with suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=0.05)
            if not self.client_eof.is_set():
                continue
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.options.grace
            elif now >= deadline and escalation:
                signum = escalation.pop(0)
                reason = f"the agent outlived the client's stdin by {self.options.grace:g} s"
                self.stamper.event("kill", signal=int(signum), reason=reason)
                self._signal(signum)
                deadline = now + self.options.grace

    def _drain(self, threads: list[threading.Thread]) -> None:
        """Read the agent's stdout and stderr to EOF, waiting at most the grace period each."""
        for thread in threads:
            thread.join(self.options.grace)
            if thread.is_alive():
                message = (
                    f"the {thread.name} stream was not at EOF {self.options.grace:g} s after the"
                    " agent exited (a child of the agent holds it, or the reader is stuck)"
                )
                self.stamper.event("error", message=message)

    def _signal(self, signum: int) -> None:
        if self.proc is None:
            self.early_signals.append(signum)
            return
        with suppress(OSError):
            os.killpg(self.proc.pid, signum)

    @contextmanager
    def _forwarding_signals(self) -> Iterator[None]:
        """Forward SIGINT, SIGTERM, SIGHUP; ignore SIGXFSZ (a file size limit fails a write)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, lambda n, _f: self._signal(n)) for s in FORWARDED_SIGNALS}
        previous[signal.SIGXFSZ] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _policy(options: RecordOptions) -> RedactionPolicy:
    return RedactionPolicy(options.redact, tuple(options.redact_stderr))


def _close_for_reader(fd: int) -> None:
    """Close our copy of the client's stdout (the client sees EOF); the fd stays valid."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def record(
    options: RecordOptions,
    *,
    warn: Callable[[str], None] = lambda _message: None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr_fd: int = 2,
) -> RecordResult:
    """Run the agent behind the tap until it exits; the trace is written as it goes.

    Raises RecordError when the trace cannot be created or the agent cannot be started.
    `warn` gets a message (once) when writing the trace fails while forwarding goes on.
    """
    if not options.command:
        raise RecordError("no agent command (acp-trace record [OPTIONS] -- AGENT [ARGS...])")
    redactor = Redactor(_policy(options))  # a bad --redact-stderr pattern fails here
    path, fd, created = create_trace(options, os.environ, datetime.now(UTC))
    queue = ByteQueue(options.queue_bytes)
    stamper = Stamper(queue)
    encode = partial(encode_item, redact=redactor, max_bytes=options.max_record_bytes)
    writer = TraceWriter(fd, path, queue, encode, stamper, warn)
    tap = _Tap(options, writer, stamper)
    try:
        code = tap.run(stdin_fd, stdout_fd, stderr_fd)
    except RecordError:
        os.close(fd)
        if created:
            path.unlink(missing_ok=True)
        raise
    return RecordResult(code, path, writer.written, stamper.dropped + writer.lost, writer.error)
