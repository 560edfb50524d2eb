"""The recorder behind `acp-trace record`: a tap between an editor and an ACP agent.

Three pump threads forward client stdin to the agent, the agent's stdout to the client and
its stderr to ours, chunk by chunk as `os.read` returns (no line buffering, no limit, no
re-encoding). Each chunk that completes lines is stamped first (seq and t_ns under one lock),
then forwarded. Stamped lines go to a queue bounded by bytes; a writer thread encodes them
(redaction included) and writes the trace, so a slow or full disk never delays the traffic.
The main thread runs the agent in its own session, forwards SIGINT/SIGTERM/SIGHUP to its
process group and ends it when it outlives the client. docs/trace-format.md has the format.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from acp_trace import __version__
from acp_trace.errors import RecordError
from acp_trace.redact import NO_POLICY, POLICY, redact_line
from acp_trace.trace_io import (
    encode_event,
    encode_header,
    encode_payload,
    encode_record,
    utc_now_rfc3339,
)

DEFAULT_GRACE = 3.0
DEFAULT_QUEUE_BYTES = 256 << 20
READ_SIZE = 64 << 10
BATCH_BYTES = 4 << 20
RECORD_OVERHEAD = 64
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TRACE_DIR_ENV = "ACP_TRACE_DIR"


@dataclass(frozen=True)
class RecordOptions:
    """What `acp-trace record` was asked to do."""

    command: list[str]
    output: Path | None = None
    directory: Path | None = None
    redact: bool = True
    max_record_bytes: int | None = None
    grace: float = DEFAULT_GRACE
    queue_bytes: int = DEFAULT_QUEUE_BYTES


@dataclass(frozen=True)
class RecordResult:
    """How a recording ended: the agent's exit code (128+N after signal N) and the trace."""

    exit_code: int
    trace: Path
    records: int
    dropped: int
    write_error: str | None


# ---------------------------------------------------------------- the trace file


def default_trace_dir(env: Mapping[str, str]) -> Path:
    """`$XDG_STATE_HOME/acp-trace/traces`, else `~/.local/state/acp-trace/traces`."""
    state = env.get("XDG_STATE_HOME") or "~/.local/state"
    return Path(state).expanduser() / "acp-trace" / "traces"


def trace_file_name(command: list[str], when: datetime) -> str:
    """A UTC timestamp plus the agent's name: `20261130T101106.123Z-codex-acp.jsonl`."""
    from acp_trace.timeline import agent_name_from_command

    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", agent_name_from_command(command)).strip("._")
    return f"{stamp}-{name or 'agent'}.jsonl"


def create_trace(
    options: RecordOptions, env: Mapping[str, str], when: datetime
) -> tuple[Path, int, bool]:
    """Open the trace for writing (mode 0600): its path, fd, and whether it was created.

    An existing `-o` file is emptied only when the writer starts, after the agent started.
    """
    if options.output is not None:
        path = options.output.expanduser()
        existed = path.exists()
        return path, _open_trace(path, 0), not existed
    folder = options.directory or Path(env.get(TRACE_DIR_ENV) or default_trace_dir(env))
    folder = folder.expanduser()
    _make_private_dirs(folder)
    name = trace_file_name(options.command, when)
    for attempt in range(1, 100):
        path = folder / (name if attempt == 1 else f"{name.removesuffix('.jsonl')}-{attempt}.jsonl")
        with suppress(FileExistsError):
            return path, _open_trace(path, os.O_EXCL), True
    raise RecordError(f"{folder}: cannot find a free name for {name}")


def _open_trace(path: Path, flag: int) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | flag, 0o600)
    except FileExistsError:
        raise
    except OSError as exc:
        raise RecordError(f"{path}: cannot create the trace ({exc.strerror or exc})") from exc
    if stat.S_ISREG(os.fstat(fd).st_mode):  # never chmod a device such as /dev/full
        os.fchmod(fd, 0o600)
    return fd


def _make_private_dirs(folder: Path) -> None:
    """Create the missing directories of `folder` with mode 0700 (existing ones are kept)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        for path in reversed(missing):
            with suppress(FileExistsError):
                path.mkdir(mode=0o700)
                os.chmod(path, 0o700)  # whatever the umask
    except OSError as exc:
        raise RecordError(f"{folder}: cannot create the directory ({exc.strerror})") from exc


# ---------------------------------------------------------------- stamping and the queue


@dataclass
class Item:
    """One stamped line (`data`) or tap event (`event`) on its way to the writer."""

    seq: int
    t_ns: int
    src: str
    data: bytes = b""
    event: dict[str, Any] | None = None
    eol: bool = True


class ByteQueue:
    """A FIFO bounded by the bytes it holds; the writer takes batches from it."""

    def __init__(self, limit: int) -> None:
        self._items: deque[tuple[Item, int]] = deque()
        self._size = 0
        self._limit = limit
        self._cond = threading.Condition()
        self._closed = False

    def fits(self, size: int) -> bool:
        """True when `size` more bytes stay within the bound (an empty queue takes anything)."""
        with self._cond:
            return not self._items or self._size + size <= self._limit

    def put(self, item: Item, size: int) -> None:
        with self._cond:
            if not self._closed:
                self._items.append((item, size))
                self._size += size
                self._cond.notify()

    def take(self, max_bytes: int) -> list[Item] | None:
        """The next batch (at least one item); None once closed and empty."""
        with self._cond:
            self._cond.wait_for(lambda: self._items or self._closed)
            batch: list[Item] = []
            taken = 0
            while self._items and (not batch or taken < max_bytes):
                item, size = self._items.popleft()
                batch.append(item)
                taken += size
            self._size -= taken
            return batch or None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Stamper:
    """Assigns seq and t_ns together under one lock, so seq order is t_ns order."""

    def __init__(self, queue: ByteQueue) -> None:
        self._lock = threading.Lock()
        self._queue = queue
        self._t0 = time.monotonic_ns()
        self.seq = 0
        self.pending_drops = 0
        self.dropped = 0

    def start(self) -> str:
        """Start the clock; the wall-clock time of t_ns 0 for the header."""
        with self._lock:
            self._t0 = time.monotonic_ns()
            return utc_now_rfc3339()

    def lines(self, src: str, lines: list[bytes], *, eol: bool = True) -> None:
        """Stamp lines completed by one read; a full queue drops them (counted)."""
        with self._lock:
            t_ns = time.monotonic_ns() - self._t0
            last = len(lines) - 1
            for index, line in enumerate(lines):
                size = len(line) + RECORD_OVERHEAD
                if not self._queue.fits(size):
                    self.pending_drops += 1
                    self.dropped += 1
                    continue
                self._flush_drops(t_ns)
                self._put(Item(0, t_ns, src, line, eol=eol or index < last), size)

    def event(self, name: str, **fields: Any) -> None:
        """Stamp a tap event (never dropped)."""
        with self._lock:
            t_ns = time.monotonic_ns() - self._t0
            self._flush_drops(t_ns)
            self._put(Item(0, t_ns, "tap", event={"event": name, **fields}), RECORD_OVERHEAD)

    def stamp(self) -> tuple[int, int]:
        """A fresh seq and t_ns for a line the writer adds itself."""
        with self._lock:
            self.seq += 1
            return self.seq, time.monotonic_ns() - self._t0

    def _flush_drops(self, t_ns: int) -> None:
        if self.pending_drops:
            event = {"event": "dropped", "count": self.pending_drops}
            self.pending_drops = 0
            self._put(Item(0, t_ns, "tap", event=event), RECORD_OVERHEAD)

    def _put(self, item: Item, size: int) -> None:
        self.seq += 1
        item.seq = self.seq
        self._queue.put(item, size)


# ---------------------------------------------------------------- encoding and writing


def line_payload(line: bytes, src: str, *, redact: bool, max_bytes: int | None) -> bytes:
    """The payload of a recorded line: redacted when it holds secrets, stderr always text."""
    if src == "stderr":
        return _text_payload(line, max_bytes)
    found = redact_line(line) if redact else None
    if found is None:
        payload = encode_payload(line, max_bytes)
        if payload.startswith(b'"msg":') and not _strict_json(payload[6:]):
            return _text_payload(line, max_bytes)  # NaN, Infinity: not JSON, so text
        return payload
    body, paths = found
    payload = encode_payload(body, max_bytes)
    if max_bytes is not None and len(body) > max_bytes:  # count the original bytes
        payload = payload.rsplit(b',"bytes":', 1)[0] + b',"bytes":%d' % len(line)
    return b'"redacted":' + orjson.dumps(paths) + b"," + payload


def _strict_json(text: bytes) -> bool:
    """False for the non-standard constants Python's json accepts (NaN, Infinity)."""
    if b"NaN" not in text and b"Infinity" not in text:
        return True
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _text_payload(line: bytes, max_bytes: int | None) -> bytes:
    if max_bytes is not None and len(line) > max_bytes:
        return encode_payload(line, max_bytes)  # a cut line is always text or b64
    try:
        return b'"text":' + orjson.dumps(line.decode("utf-8"))
    except UnicodeDecodeError:
        return b'"b64":"' + base64.b64encode(line) + b'"'


def encode_item(item: Item, *, redact: bool, max_bytes: int | None) -> bytes:
    """The trace line (with newline) for one queued item."""
    if item.event is not None:
        return encode_record(item.seq, item.t_ns, "tap", encode_event(**item.event))
    payload = line_payload(item.data, item.src, redact=redact, max_bytes=max_bytes)
    if not item.eol:
        payload = b'"eol":false,' + payload
    return encode_record(item.seq, item.t_ns, item.src, payload)


class TraceWriter:
    """The writer thread: encodes queued items and appends them to the trace.

    On the first write error it warns once, tries to append an `error` event, and from then
    on discards what it takes (counted, and reported by a `dropped` event at the end when
    that can still be written). The forwarding threads never wait for it.
    """

    def __init__(
        self,
        fd: int,
        path: Path,
        queue: ByteQueue,
        encode: Callable[[Item], bytes],
        stamper: Stamper,
        warn: Callable[[str], None],
    ) -> None:
        self._fd, self._path, self._queue, self._encode = fd, path, queue, encode
        self._stamper, self._warn = stamper, warn
        self._thread = threading.Thread(target=self._run, name="acp-trace-writer", daemon=True)
        self._at_line_start = True
        self._header = b""
        self.error: str | None = None
        self.written = 0
        self.lost = 0

    def start(self, header: bytes) -> None:
        """Empty the file (when it is a regular one) and start writing, header first."""
        if stat.S_ISREG(os.fstat(self._fd).st_mode):
            with suppress(OSError):
                os.ftruncate(self._fd, 0)
        self._header = header
        self._thread.start()

    def close(self) -> None:
        """Write what is queued, then the final `dropped` event if records were lost."""
        self._queue.close()
        self._thread.join()
        if self.lost:
            self._append_event("dropped", count=self.lost)
        os.close(self._fd)

    def _run(self) -> None:
        self._write(self._header, 0)
        while (batch := self._queue.take(BATCH_BYTES)) is not None:
            self._write(b"".join(self._encode_safely(item) for item in batch), len(batch))

    def _encode_safely(self, item: Item) -> bytes:
        try:
            return self._encode(item)
        except Exception as exc:  # a bug must cost one record, never the trace
            event = {"event": "error", "message": f"cannot encode the record: {exc!r}"}
            return encode_item(Item(item.seq, item.t_ns, "tap", event=event), **_PLAIN)

    def _write(self, data: bytes, count: int) -> None:
        if self.error is not None:
            self.lost += count
            return
        try:
            self._write_all(data)
        except OSError as exc:
            self.lost += count
            self.error = f"cannot write the trace {self._path}: {exc.strerror or exc}"
            self._warn(f"{self.error}; forwarding goes on, the trace stops here")
            self._append_event("error", message=self.error)
        else:
            self.written += count

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            done = os.write(self._fd, view)
            if done:
                self._at_line_start = view[done - 1] == ord("\n")
            view = view[done:]

    def _append_event(self, name: str, **fields: Any) -> None:
        """Best effort: one tap event after the last (possibly cut) line."""
        seq, t_ns = self._stamper.stamp()
        line = encode_item(Item(seq, t_ns, "tap", event={"event": name, **fields}), **_PLAIN)
        with suppress(OSError):
            self._write_all(line if self._at_line_start else b"\n" + line)


_PLAIN: dict[str, Any] = {"redact": False, "max_bytes": None}


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
        return {
            "started_at": started_at,
            "command": self.options.command,
            "cwd": os.getcwd(),
            "pid": pid,
            "recorder": f"acp-trace {__version__}",
            "redaction": POLICY if self.options.redact else NO_POLICY,
        } | self._limits()

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
    path, fd, created = create_trace(options, os.environ, datetime.now(UTC))
    queue = ByteQueue(options.queue_bytes)
    stamper = Stamper(queue)
    encode = partial(encode_item, redact=options.redact, max_bytes=options.max_record_bytes)
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
