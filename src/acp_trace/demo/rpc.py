"""A small JSON-RPC 2.0 line endpoint shared by the demo agent and the demo client.

One message per line, no line-length limit (plain `readline` on a binary stream), a reader
thread that resolves pending requests and hands everything else to a handler or an inbox.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import select
import stat
import threading
from collections.abc import Callable
from typing import IO, Any

from acp_trace.jsonrpc import id_key, json_bytes, loads_message

Message = dict[str, Any]
# Called in the reader thread for every incoming request or notification; True means handled.
Handler = Callable[[Message], bool]


class ConnectionClosed(Exception):
    """The peer closed its end before answering."""


def wait_limit(seconds: float | None) -> float | None:
    """A timeout the threading primitives take: None (no limit) for `inf` and for any time
    longer than they can wait (`threading.TIMEOUT_MAX`, which a larger one overflows)."""
    if seconds is None or seconds >= threading.TIMEOUT_MAX:
        return None
    return seconds


def watch_reader(fd: int | None, gone: Callable[[], None]) -> Callable[[], None]:
    """Call `gone` (from a daemon thread) as soon as the reader of the pipe or socket `fd` has
    closed its end, even while nothing is being written (poll reports POLLERR or POLLHUP on
    the writing end then). Any other kind of file has no reader to lose: nothing is watched.
    Returns `stop`, which ends the watching at once: a poll holds the file open, so the
    reader sees the end of `fd` only once the watching has stopped."""
    try:
        kind = os.fstat(fd).st_mode if fd is not None else 0
    except OSError:
        kind = 0
    if fd is None or not (stat.S_ISFIFO(kind) or stat.S_ISSOCK(kind)):
        return lambda: None
    wake_r, wake_w = os.pipe()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: POLLERR, POLLHUP and POLLNVAL only
        poller.register(wake_r, select.POLLIN)
        try:
            while not (events := _poll(poller)):
                pass
            if all(ready != wake_r for ready, _ in events):
                gone()
        finally:
            os.close(wake_r)

    thread = threading.Thread(target=watch, name="rpc-reader-watch", daemon=True)
    thread.start()

    def stop() -> None:
        with contextlib.suppress(OSError):  # the watcher already ended (it saw the reader go)
            os.write(wake_w, b"x")
        thread.join(5)
        os.close(wake_w)

    return stop


def _poll(poller: select.poll) -> list[tuple[int, int]]:
    try:
        return poller.poll()
    except InterruptedError:
        return []


class Endpoint:
    """Send and receive JSON-RPC messages over a pair of byte streams."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        handler: Handler | None = None,
        *,
        tee_in: IO[bytes] | None = None,
        tee_out: IO[bytes] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._handler = handler
        self._tee_in = tee_in
        self._tee_out = tee_out
        self._lock = threading.Lock()
        self._ids = itertools.count(0)
        self._pending: dict[str, queue.Queue[Message | None]] = {}
        self.inbox: queue.Queue[Message | None] = queue.Queue()
        self.closed = threading.Event()
        # The peer stopped reading: a write failed (EPIPE), or `abandon` was called.
        self.gone = threading.Event()
        self._thread = threading.Thread(target=self._read_loop, name="rpc-reader", daemon=True)

    def writer_fd(self) -> int | None:
        """The file descriptor messages are written to, when the writer has one."""
        try:
            return self._writer.fileno()
        except (AttributeError, OSError, ValueError):
            return None

    def start(self) -> Endpoint:
        """Start the reader thread; returns self."""
        self._thread.start()
        return self

    # ------------------------------------------------------------ sending

    def send(self, msg: Message | bytes) -> None:
        """Write one message (or raw bytes, for fault injection) as one line and flush."""
        data = msg if isinstance(msg, bytes) else json_bytes(msg) + b"\n"
        with self._lock:
            if self._tee_out is not None:
                self._tee_out.write(data)
                self._tee_out.flush()
            if self.gone.is_set():
                return
            try:
                self._writer.write(data)
                self._writer.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.abandon()

    def abandon(self) -> None:
        """The peer is gone: nothing more is written, and whoever waits for a message (a
        response, the next request) is woken with none."""
        self.gone.set()
        self.closed.set()
        self.inbox.put(None)
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        """Every request still waiting gets None (its response, if one came, stays first)."""
        for box in list(self._pending.values()):
            with contextlib.suppress(queue.Full):
                box.put_nowait(None)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, msg_id: Any, result: Any) -> None:
        """Send a success response."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def fail(self, msg_id: Any, code: int, message: str) -> None:
        """Send an error response."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def request(self, method: str, params: Any, timeout: float | None = None) -> Message:
        """Send a request and wait for its response (raises ConnectionClosed or TimeoutError)."""
        return self.wait(self.start_request(method, params), timeout)

    def start_request(self, method: str, params: Any) -> Any:
        """Send a request without waiting; returns its id for `wait`."""
        msg_id = next(self._ids)
        self._pending[id_key(msg_id)] = queue.Queue(maxsize=1)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def wait(self, msg_id: Any, timeout: float | None = None) -> Message:
        """Wait for the response to a request sent with `start_request`."""
        box = self._pending[id_key(msg_id)]
        try:
            answer = box.get(timeout=wait_limit(timeout))
        except queue.Empty:
            raise TimeoutError(f"no response to request {msg_id} within {timeout} s") from None
        finally:
            self._pending.pop(id_key(msg_id), None)
        if answer is None:
            raise ConnectionClosed(f"the connection ended before the response to request {msg_id}")
        return answer

    # ------------------------------------------------------------ receiving

    def _read_loop(self) -> None:
        try:
            for line in iter(self._reader.readline, b""):
                if self._tee_in is not None:
                    self._tee_in.write(line)
                    self._tee_in.flush()
                self._dispatch_line(line)
        except (OSError, ValueError):
            pass
        finally:
            self.closed.set()
            self.inbox.put(None)
            self._wake_waiters()

    def _dispatch_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            value = loads_message(line)  # an id beyond 64 bits stays exact: answered as sent
        except ValueError:
            self.inbox.put({"jsonrpc": "2.0", "_unparseable": line.decode("utf-8", "replace")})
            return
        for msg in value if isinstance(value, list) else [value]:
            if isinstance(msg, dict):
                self._dispatch(msg)

    def _dispatch(self, msg: Message) -> None:
        if "method" not in msg and "id" in msg:
            box = self._pending.get(id_key(msg["id"]))
            if box is not None:
                box.put(msg)
            return
        if self._handler is not None and self._handler(msg):
            return
        self.inbox.put(msg)
