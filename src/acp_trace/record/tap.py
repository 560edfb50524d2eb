"""The recorder behind `acp-trace record`: a tap between an editor and an ACP agent.

The forwarding process does as little as it can. Three pump threads (pump.py) read the
client's stdin, the agent's stdout and its stderr, read the clock, put the raw bytes into the
shared ring (ring.py) and forward them unchanged. Everything else (cutting lines, `seq`, JSON,
redaction, the disk) happens in the writer process (writer.py, started by writer_process.py),
which never takes this process's GIL; a full ring drops chunks and counts them.

The main thread starts the agent in its own session, forwards SIGINT, SIGTERM and SIGHUP to
its process group (SIGKILL follows a SIGTERM the agent ignores for the grace period), ends it
when it outlives the client (SIGTERM, then SIGKILL), and finally waits a bounded time for the
writer. docs/trace-format.md has the format, docs/performance.md the measurements.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from acp_trace import __version__
from acp_trace.errors import RecordError
from acp_trace.record.agent import spawn_agent
from acp_trace.record.options import RecordOptions, RecordResult
from acp_trace.record.trace_file import TraceTarget, open_trace

# The ring, the pumps and the writer process are imported once the agent is starting (in
# `_Tap.run`): the path from the tap's start to the agent's stays short.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from acp_trace.record.ring import Ring, RingWriter
    from acp_trace.record.ring_memory import RingMemory
    from acp_trace.record.tail import Tail
    from acp_trace.record.writer_process import Watchdog, WriterProcess

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def exit_code(returncode: int) -> int:
    """A shell's exit code for a child's return code: 128+N after signal N."""
    return 128 - returncode if returncode < 0 else returncode


class _Tap:
    """One recording: the agent, the pumps, the writer process, the end of the session."""

    def __init__(self, options: RecordOptions, target: TraceTarget, warn: Callable[[str], None]):
        self.options, self.target, self.warn = options, target, warn
        self.proc: subprocess.Popen[bytes] | None = None
        self.ring: Ring | None = None
        self.out: RingWriter | None = None
        self.writer: WriterProcess | None = None
        self.memory: RingMemory | None = None
        self.client_eof = threading.Event()
        self.early_signals: list[int] = []
        self.term_at: float | None = None  # when a SIGTERM was forwarded to the living agent
        self.hurry = False  # a signal came after the agent was reaped: finish quickly
        self.t0 = self.wall_ns = 0
        self.write_error: str | None = None
        self.unwritten = 0
        self.writer_ended = False
        self.tail: Tail | None = None  # the account the tap finished (the writer could not)
        self._relayed = 0

    def run(self, stdin_fd: int, stdout_fd: int, stderr_fd: int) -> int:
        with self._forwarding_signals():
            self.t0, self.wall_ns = time.monotonic_ns(), time.time_ns()
            self.proc = proc = spawn_agent(self.options.command)
            assert proc.stdin and proc.stdout and proc.stderr
            from acp_trace.record.pump import Pump
            from acp_trace.record.ring import RING_BYTES, Ring, RingWriter
            from acp_trace.record.ring_memory import RingMemory
            from acp_trace.record.writer_process import start_writer

            if problem := self.target.commit():
                self.warn(problem)
            if self.target.notice:
                self.warn(self.target.notice)
            queue = self.options.queue_bytes
            self.ring = ring = Ring(min(queue, RING_BYTES))
            self.writer = start_writer(
                ring, self.target, proc, self.options, self._writer_main, queue - ring.size
            )
            self.out = out = RingWriter(ring, self.writer.wake_fd)
            self.memory = RingMemory(ring, out, out.wake)
            self._thread("client", self._client, stdin_fd, proc.stdin.fileno())
            drains = [
                self._thread("agent", self._agent, proc.stdout.fileno(), stdout_fd),
                self._thread("stderr", Pump(proc.stderr.fileno(), stderr_fd, "stderr", out).run),
            ]
            self.memory.start()  # after the pumps: a thread start is a millisecond or two here
            for signum in self.early_signals:
                self._signal(signum)
            returncode = self._supervise(proc)
            self._drain(drains)
            sig = -returncode if returncode < 0 else None
            code = returncode if sig is None else None
            out.event(time.monotonic_ns(), "exit", code=code, signal=sig)
            _close_for_reader(stdout_fd)
            self._finish_writer()
        return exit_code(returncode)

    def _header(self, started_at: str, pid: int) -> dict[str, Any]:
        from acp_trace.redaction.redactor import RedactionPolicy, redact_command

        options = self.options
        command, redacted = options.command, list[str]()
        if options.redact:
            command, redacted = redact_command(command)
        policy = RedactionPolicy(
            options.redact, tuple(options.redact_stderr), options.redact_content
        )
        return {
            "started_at": started_at,
            "command": command,
            "cwd": os.getcwd(),
            "pid": pid,
            "recorder": f"acp-trace {__version__}",
            "redaction": policy.header(),
            "max_record_bytes": options.max_record_bytes,
        } | ({"redacted": redacted} if redacted else {})

    def _writer_main(
        self,
        ring: Ring,
        target: TraceTarget,
        wake_fd: int,
        dog: Watchdog,
        backlog: tuple[int, int] | None,
    ) -> None:
        """The writer process's work (it imports the encoders; the tap never does)."""
        from acp_trace.record.backlog import Backlog, keep_up, publish_position
        from acp_trace.record.ring_reader import RingReader
        from acp_trace.record.writer_process import import_gently

        reader, pool = RingReader(ring), Backlog(*backlog) if backlog else None

        def meanwhile() -> None:  # the ring kept warm while the encoders are imported
            assert pool is not None
            keep_up(reader, pool, lambda: publish_position(ring, reader, pool))

        modules = ("acp_trace.record.writer", "acp_trace.trace.format")
        import_gently(*modules, meanwhile=None if pool is None else meanwhile)
        from acp_trace.record.writer import rfc3339, run_writer
        from acp_trace.trace.format import encode_header

        assert self.proc is not None
        pid, started_at = self.proc.pid, rfc3339(self.wall_ns)
        header = lambda: encode_header(self._header(started_at, pid))  # noqa: E731
        run_writer(
            ring,
            target,
            wake_fd,
            dog,
            options=self.options,
            t0=self.t0,
            header=header,
            reader=reader,
            backlog=pool,
        )

    def result(self, code: int) -> RecordResult:
        from acp_trace.record.ring import DROPPED, LOST, WRITTEN

        ring = self.ring
        assert ring is not None and self.out is not None
        out = self.out
        if self.tail is not None:  # the tap finished the account: it has every stream's loss
            streams = self.tail.streams.values()
            lost = sum(acc.dropped + acc.unwritten for acc in streams) + out.lost_events
            lost += self.unwritten - self.tail.unwritten()  # events the trace did not get
        else:
            lost = ring.ctl[DROPPED] + ring.ctl[LOST] + out.lost_events + out.unsent_lines()
        from pathlib import Path  # loaded at the end, not on the way to the agent

        trace = Path(self.target.path)
        return RecordResult(code, trace, ring.ctl[WRITTEN], lost, self.write_error)

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread

    def _client(self, source: int, sink: int) -> None:
        """Client to agent; at the client's EOF close the agent's stdin and start the grace.
        When the agent closes its stdin first, close ours: the client's next write fails."""
        from acp_trace.record.pump import Pump

        assert self.out is not None and self.proc is not None and self.proc.stdin is not None
        pump = Pump(source, sink, "client", self.out, watch=True)
        pump.run()
        if pump.sink_closed:
            _close_for_writer(source)
            reason = "the agent closed its stdin: the recorder closed its own, as a pipe would"
            self.out.event(time.monotonic_ns(), "closed", stream="client", reason=reason)
        else:  # recorded before the agent can see it: what it writes after is after it
            self.out.event(time.monotonic_ns(), "eof", stream="client")
        with suppress(OSError):
            self.proc.stdin.close()
        if not pump.sink_closed:
            self.client_eof.set()

    def _agent(self, source: int, sink: int) -> None:
        """Agent to client; at the agent's EOF the client sees EOF at once (the agent may go
        on running). When the client closes its end first, close ours: the agent's next write
        fails."""
        from acp_trace.record.pump import Pump

        assert self.out is not None and self.proc is not None and self.proc.stdout is not None
        pump = Pump(source, sink, "agent", self.out, watch=True)
        pump.run()
        if pump.sink_closed:
            with suppress(OSError):
                self.proc.stdout.close()
            reason = "the client closed the recorder's stdout: the recorder closed the agent's"
            self.out.event(time.monotonic_ns(), "closed", stream="agent", reason=reason)
            return
        self.out.event(time.monotonic_ns(), "eof", stream="agent")
        _close_for_reader(sink)

    def _supervise(self, proc: subprocess.Popen[bytes]) -> int:
        """Wait for the agent; end it after the grace period once the client is gone, or
        once it ignored a forwarded SIGTERM that long."""
        from acp_trace.record.ring import AGENT_REAPED

        deadline: float | None = None
        escalation = [signal.SIGTERM, signal.SIGKILL]
        grace = self.options.grace
        while True:
            with suppress(subprocess.TimeoutExpired):
                returncode = proc.wait(timeout=0.05)
                assert self.ring is not None
                self.ring.ctl[AGENT_REAPED] = 1
                return returncode
            self._relay()
            self._check_writer()
            if self.memory is not None:
                self.memory.maybe_trim()
            now = time.monotonic()
            if self.term_at is not None and now - self.term_at >= grace and escalation:
                reason = (
                    f"the agent did not exit within {grace:g} s of a SIGTERM sent to the recorder"
                )
                self._kill(signal.SIGKILL, reason)
                escalation, self.term_at = [], None
            if not self.client_eof.is_set():
                continue
            if deadline is None:
                deadline = now + grace
            elif now >= deadline and escalation:
                reason = f"the agent outlived the client's stdin by {grace:g} s"
                self._kill(escalation.pop(0), reason)
                deadline = now + grace

    def _check_writer(self) -> None:
        """Say once that the writer process ended early (forwarding goes on)."""
        writer = self.writer
        if writer is None or self.writer_ended or writer.running():
            return
        self.writer_ended = True
        message = (
            f"the trace writer ended early ({_status_text(writer.status)}): nothing more is"
            f" recorded in {self.target.path}; forwarding goes on"
        )
        self.write_error = self.write_error or message
        self.warn(message)

    def _kill(self, signum: int, reason: str) -> None:
        assert self.out is not None
        self.out.event(time.monotonic_ns(), "kill", signal=int(signum), reason=reason)
        self._signal(signum, forwarded=False)

    def _drain(self, threads: list[threading.Thread]) -> None:
        """Read the agent's stdout and stderr to EOF, waiting at most the grace period each."""
        assert self.out is not None
        for thread in threads:
            deadline = time.monotonic() + self.options.grace
            while thread.is_alive() and time.monotonic() < deadline and not self.hurry:
                thread.join(0.05)
            if thread.is_alive():
                message = (
                    f"the {thread.name} stream was not at EOF {self.options.grace:g} s after the"
                    " agent exited (a child of the agent holds it, or the reader is stuck)"
                )
                self.out.event(time.monotonic_ns(), "error", message=message, cause="drain")

    def _finish_writer(self) -> None:
        """Close the recording and wait for the writer for as long as it makes progress
        (giving up after the grace period without any); when it had to be stopped, or died,
        finish the trace in its place (tail.py): its account still reaches the trace."""
        assert self.out is not None and self.writer is not None and self.ring is not None
        grace, writer, out = self.options.grace, self.writer, self.out
        closed = False

        def close() -> None:
            nonlocal closed
            closed = closed or out.close(time.monotonic_ns())

        finished = writer.wait(grace, lambda: self.hurry, close)
        self._relay()
        if finished and writer.status == 0 and closed:
            writer.close()
            return
        said = finished  # _check_writer tells stderr that the writer ended early, once
        if finished:
            self._check_writer()
            reason = f"the trace writer ended early ({_status_text(writer.status)})"
        else:
            reason = (
                f"the trace {self.target.path} took no more records for {grace:g} s (a FIFO"
                " nobody reads, a hung disk, a stopped writer?); the recorder stopped its writer"
            )
        self._finish_tail(reason, said)
        writer.close()

    def _finish_tail(self, reason: str, said: bool) -> None:
        """Count what the writer did not write; append it to the trace if the tap can."""
        from acp_trace.record.account import describe
        from acp_trace.record.tail import count_unread, write_tail
        from acp_trace.record.writer import rfc3339
        from acp_trace.trace.format import encode_header

        assert self.out is not None and self.writer is not None and self.ring is not None
        tail = count_unread(self.ring, self.t0, self.out.pending_gaps(), self.writer.backlog_fd)
        self.tail = tail
        self.unwritten = tail.unwritten()
        fd, written = self.writer.trace_fd, False
        if fd is not None and not tail.state.stopped:
            assert self.proc is not None
            started_at, pid = rfc3339(self.wall_ns), self.proc.pid
            written = write_tail(
                fd, tail, reason, lambda: encode_header(self._header(started_at, pid))
            )
        if not written:
            self.unwritten += len(tail.events)
        where = "the recorder appended it to the trace" if written else "the trace does not hold it"
        message = (
            f"{'' if said else reason + ': '}{self.unwritten} records were not written"
            f" ({describe(tail.streams)}; {where})"
        )
        self.write_error = self.write_error or message
        self.warn(message)

    def _relay(self) -> None:
        """Print what the writer process said (a write error, a removed trace)."""
        if self.ring is None:
            return
        messages, self._relayed = self.ring.messages(self._relayed)
        for message in messages:
            self.write_error = self.write_error or message
            self.warn(message)

    def _signal(self, signum: int, *, forwarded: bool = True) -> None:
        proc = self.proc
        if proc is None:
            self.early_signals.append(signum)
            return
        if proc.returncode is not None:
            self.hurry = True
            return
        if forwarded and signum == signal.SIGTERM and self.term_at is None:
            self.term_at = time.monotonic()
        with suppress(OSError):
            os.killpg(proc.pid, signum)

    @contextmanager
    def _forwarding_signals(self) -> Iterator[None]:
        """Forward SIGINT, SIGTERM, SIGHUP; ignore SIGXFSZ (a file size limit fails a write)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in (*FORWARDED_SIGNALS, signal.SIGXFSZ)}
        try:
            for signum in FORWARDED_SIGNALS:
                signal.signal(signum, lambda n, _frame: self._signal(n))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _status_text(status: int | None) -> str:
    if status is None:
        return "unknown status"
    if status < 0:
        return f"signal {-status}"
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _close_for_writer(fd: int) -> None:
    """Close our copy of the client's stdin (its next write fails); the fd stays valid."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, fd)
    os.close(null)


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
    `warn` gets each message a person should read (once per problem) while forwarding goes
    on: the trace cannot be written, it was removed, the writer was stuck at the end.
    """
    if not options.command:
        raise RecordError("no agent command (acp-trace record [OPTIONS] -- AGENT [ARGS...])")
    if options.redact_stderr:  # a bad --redact-stderr pattern fails before the agent starts
        from acp_trace.redaction.redactor import RedactionPolicy, Redactor

        Redactor(RedactionPolicy(options.redact, tuple(options.redact_stderr)))
    target = open_trace(options, os.environ)
    tap = _Tap(options, target, warn)
    try:
        code = tap.run(stdin_fd, stdout_fd, stderr_fd)
    except RecordError:
        target.abandon()
        raise
    return tap.result(code)
