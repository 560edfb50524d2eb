"""The writer process of a recording: frames from the ring become trace records.

The tap's forwarding threads only stamp each read and hand its raw bytes on (ring.py); this
module runs in a process of its own (writer_process.py forks it), so cutting lines, encoding,
redaction and disk writes never take the forwarding threads' GIL. `Encoder` turns frames into
record lines: it cuts the lines out of each stream's chunks, assigns `seq` in frame order
(which is `t_ns` order) and encodes each line with `line_payload`, the one call that decides a
record's payload (redaction included). `Writer` is the loop: take frames, encode them, write
the batch (sink.py), give the ring space back, until the tap closes the recording or is gone.

When it falls behind, the writer moves what waits in the ring to its backlog (backlog.py) and,
while the traffic comes faster than it encodes, does nothing else: encoding then would take a
core from the forwarding without keeping the backlog from growing. It encodes from the
backlog as soon as the traffic slows below its own pace (or the backlog is full), so a burst
is forwarded at the speed of a plain relay and recorded whole after it (issue 34); a stream
it keeps up with (a live session, issue 31's `watch`) is never deferred.

Memory stays bounded: an unfinished line keeps at most `max_bytes + 1` bytes (the rest is only
counted, and the record says `truncated` with the real `bytes`), the ring is fixed, and the
backlog holds at most what `--queue-bytes` leaves beyond the ring.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from acp_trace.record import account
from acp_trace.record.account import StreamAccount, WriterState
from acp_trace.record.backlog import SPILL_AT, Backlog, keep_up
from acp_trace.record.options import RecordOptions
from acp_trace.record.ring import (
    CHUNK,
    CLOSE,
    DROPPED,
    END,
    EVENT,
    GAP_KIND,
    LOST,
    WRITTEN,
    Frame,
    Ring,
)
from acp_trace.record.ring_reader import RingReader
from acp_trace.record.sink import TraceSink
from acp_trace.record.trace_file import TraceTarget
from acp_trace.record.writer_process import Watchdog
from acp_trace.redaction.redactor import RedactionPolicy, Redactor, line_payload
from acp_trace.trace.format import encode_event, encode_payload, encode_record

BATCH_BYTES = 1 << 20  # frames taken per write
MIN_WAIT, MAX_WAIT = 0.005, 0.05  # seconds between looks at an idle ring (the tap wakes it
# at once when WAKE_AT bytes wait, and for the end)
DEFER_WAIT = 0.002  # seconds between spills while a burst is deferred
START_PACE = 64e6  # bytes a second the writer is taken to encode before it measured itself
STREAMS = ("client", "agent", "stderr")


@dataclass
class Item:
    """One record for `encode_item`: a line (`data`) or a tap event (`event`), already stamped.
    The recorder itself goes through `Encoder`; this is for code that writes traces directly."""

    seq: int
    t_ns: int
    src: str
    data: bytes = b""
    event: dict[str, Any] | None = None
    eol: bool = True


class Stream:
    """The unfinished line of one stream: its first `cap + 1` bytes and its real length."""

    __slots__ = ("kept", "parts", "skipping", "total")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.skipping = False  # after a gap: the rest of a line whose start was dropped

    def add(self, data: bytes, cap: int) -> None:
        self.total += len(data)
        room = cap + 1 - self.kept
        if room > 0 and data:
            piece = data if len(data) <= room else data[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def take(self) -> tuple[bytes, int]:
        """The kept bytes and the real length; the stream starts a new line."""
        line = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        total = self.total
        self.parts, self.kept, self.total = [], 0, 0
        return line, total


class Encoder:
    """Frames in, record lines out (with `seq` 1, 2, 3, ... and `t_ns` from the tap's start)."""

    def __init__(self, *, redact: bool | Redactor, max_bytes: int, t0: int) -> None:
        if not isinstance(redact, Redactor):
            redact = Redactor(RedactionPolicy(enabled=redact))
        self.redact, self.cap, self.t0 = redact, max_bytes, t0
        self.seq = 0
        self.t = 0  # t_ns of the last record: a record's t_ns never goes back
        self.closed = False
        self.dropped = 0  # lines lost in gaps (chunks a full ring dropped)
        self._streams = {src: Stream() for src in STREAMS}
        self.accounts = {src: StreamAccount() for src in STREAMS}  # account.py

    def frame(self, frame: Frame, out: list[bytes]) -> None:
        self.t = t = max(frame.t - self.t0, self.t)
        if frame.kind == CHUNK:
            self._chunk(self._streams[frame.src], frame.src, t, frame.data, out)
        elif frame.kind == EVENT:
            fields = frame.event()
            self.event(out, fields.pop("event"), **fields)
        elif frame.kind == END:
            self._end(frame.src, t, out)
        elif frame.kind == GAP_KIND:
            self._gap(frame, out)
        elif frame.kind == CLOSE:
            self.closed = True

    def event(self, out: list[bytes], name: str, **fields: Any) -> None:
        """Append a tap event at the current `t_ns`."""
        self.seq += 1
        out.append(encode_record(self.seq, self.t, "tap", encode_event(name, **fields)))

    def event_line(self, seq: int, message: str, cause: str) -> bytes:
        """An `error` event with a given `seq` (the sink's last line)."""
        return encode_record(
            seq, self.t, "tap", encode_event("error", message=message, cause=cause)
        )

    def state(self) -> dict[str, StreamAccount]:
        """The accounts, with the state of each stream's current line."""
        for src, stream in self._streams.items():
            acc = self.accounts[src]
            acc.skipping, acc.pending = stream.skipping, stream.total > 0
        return self.accounts

    def finish(self, out: list[bytes]) -> None:
        """Record every stream's unfinished line (the recording ends without its END frames)."""
        for src in STREAMS:
            self._end(src, self.t, out)

    def _chunk(self, stream: Stream, src: str, t: int, data: bytes, out: list[bytes]) -> None:
        acc = self.accounts[src]
        acc.bytes += len(data)
        parts = data.split(b"\n")
        rest = parts.pop()
        if parts:
            acc.lines += len(parts)
            if stream.skipping:  # the first part ends a line whose start was dropped
                stream.skipping = False
                del parts[0]
            elif stream.total:
                stream.add(parts[0], self.cap)
                line, total = stream.take()
                self._line(src, t, line, total, True, out)
                del parts[0]
            for line in parts:
                kept = line if len(line) <= self.cap else line[: self.cap + 1]
                self._line(src, t, kept, len(line), True, out)
        elif stream.skipping:
            return
        if rest:
            stream.add(rest, self.cap)

    def _end(self, src: str, t: int, out: list[bytes]) -> None:
        stream = self._streams[src]
        if stream.total or stream.skipping:
            self.accounts[src].lines += 1
        stream.skipping = False
        if stream.total:
            line, total = stream.take()
            self._line(src, t, line, total, False, out)

    def _gap(self, frame: Frame, out: list[bytes]) -> None:
        """Chunks the tap had to drop: the lines they touched are lost, and counted (a line
        already being skipped since an earlier gap is counted once)."""
        lost, newlines, ended = frame.gap()
        stream = self._streams[frame.src]
        counted = stream.skipping
        stream.take()
        stream.skipping = not ended
        count = newlines + (0 if ended else 1) - (1 if counted else 0)
        acc = self.accounts[frame.src]
        acc.bytes += lost
        acc.lines += newlines
        if count:
            acc.dropped += count
            self.dropped += count
            self.event(out, "dropped", count=count, stream=frame.src)

    def _line(self, src: str, t: int, line: bytes, total: int, eol: bool, out: list[bytes]) -> None:
        failure: Exception | None = None
        try:
            payload = line_payload(line, src, redact=self.redact, max_bytes=self.cap, size=total)
        except Exception as exc:  # a bug or no memory must cost one record's content, no more
            payload, failure = self._withheld(line, src, total), exc
        if not eol:
            payload = b'"eol":false,' + payload
        self.seq += 1
        self.accounts[src].recorded += 1
        out.append(encode_record(self.seq, t, src, payload))
        if failure is not None:
            why = f"{type(failure).__name__}: {failure}"[:200]
            message = f"cannot encode record {self.seq} ({why}); it is recorded without its content"
            self.event(out, "error", message=message, cause="encode")

    def _withheld(self, line: bytes, src: str, total: int) -> bytes:
        """A payload that cannot leak: the text itself only when nothing is redacted."""
        if not self.redact.policy.enabled and src != "stderr":  # stderr is text, never msg
            try:
                return encode_payload(line, self.cap, total)
            except Exception:
                pass
        return b'"text":"","truncated":true,"bytes":%d' % total


class Writer:
    """The writer loop: frames from the ring, records to the sink, until the recording ends
    (the tap's CLOSE frame, or the watchdog found the tap gone and the ring is empty)."""

    def __init__(
        self,
        ring: Ring,
        encoder: Encoder,
        wake_fd: int,
        say: Callable[[str], None] | None = None,
        reader: RingReader | None = None,
        backlog: Backlog | None = None,
    ) -> None:
        self._ring, self._encoder, self._wake_fd = ring, encoder, wake_fd
        self._say = say or ring.post
        self._sink: TraceSink
        self._reader = RingReader(ring) if reader is None else reader
        self._backlog = backlog
        self._late: list[tuple[str, dict[str, Any]]] = []
        self.finished = threading.Event()
        self.deferring = False  # the last step only moved frames to the backlog
        self._pace = START_PACE  # bytes a second this writer encodes (measured)
        self._look = (time.monotonic(), 0)  # when the traffic was last measured, and PUT

    def late_event(self, name: str, fields: dict[str, Any]) -> None:
        """Add a tap event from another thread (the watchdog's)."""
        self._late.append((name, fields))

    def run(self, sink: TraceSink, header: bytes, watchdog: Watchdog) -> None:
        self._sink = sink
        sink.start(header)
        self._publish()
        wait = MIN_WAIT
        while not self._encoder.closed:
            worked = self._step()
            if self.deferring:
                time.sleep(DEFER_WAIT)  # not the wake pipe: the pumps would wake it at once
                continue
            if worked:
                wait = MIN_WAIT
                continue
            if watchdog.settled.is_set() and not self._reader.pending() and not self._held():
                self._step(ending=True)
                break
            self._sleep(wait)
            wait = min(wait * 2, MAX_WAIT)
        self._account()
        self._sink.close()
        self._publish()
        self.finished.set()

    def _held(self) -> int:
        return self._backlog.held if self._backlog is not None else 0

    def _step(self, *, ending: bool = False) -> bool:
        """Encode and write one batch, from the backlog while it holds frames; first move
        what waits in the ring there when the writer is behind. True when it did anything."""
        self.deferring = False
        backlog = self._backlog
        if backlog is None:
            return self._encode(self._reader, ending)
        moved = keep_up(self._reader, backlog, self._publish)
        if not backlog.held:
            return self._encode(self._reader, ending)
        if not (ending or backlog.failed) and backlog.room() > SPILL_AT and self._outpaced():
            self.deferring = True
            return bool(moved)
        return self._encode(backlog, ending) or bool(moved)

    def _outpaced(self) -> bool:
        """Whether the traffic since the last look came faster than this writer encodes."""
        now, put = time.monotonic(), self._reader.put_data()
        then, before = self._look
        self._look = (now, put)
        return now > then and (put - before) / (now - then) > self._pace

    def _encode(self, source: RingReader | Backlog, ending: bool) -> bool:
        """One batch from `source` (the ring, or the backlog while it holds frames)."""
        out: list[bytes] = []
        first = self._encoder.seq + 1
        before = source.taken()
        began = time.monotonic()
        for frame in source.frames(BATCH_BYTES):
            self._encoder.frame(frame, out)
        took = source.taken() - before  # in the ring a WRAP alone moves it (a trim waits on it)
        if ending:
            self._encoder.finish(out)
        while self._late:
            name, fields = self._late.pop(0)
            self._encoder.event(out, name, **fields)
        if not took and not out:
            return False
        written = self._sink.write(out, first)
        if written < len(out):
            self._unwritten(out[written:])
        spent = time.monotonic() - began
        if took > BATCH_BYTES // 2 and spent > 0:
            self._pace = 0.7 * self._pace + 0.3 * took / spent
        self._publish()  # before the room is given back: the tap counts from what it says
        source.release()
        return True

    def _sleep(self, seconds: float) -> None:
        ready, _, _ = select.select([self._wake_fd], [], [], seconds)
        if ready:
            with suppress(OSError):
                os.read(self._wake_fd, 4096)

    def _unwritten(self, lines: list[bytes]) -> None:
        """Move the lines of a batch the trace did not take from `recorded` to `unwritten`."""
        accounts = self._encoder.accounts
        for line in lines:
            at = line.find(b'"src":"') + 7
            acc = accounts.get(line[at : line.find(b'"', at)].decode("ascii", "replace"))
            if acc is not None:
                acc.recorded -= 1
                acc.unwritten += 1

    def _account(self) -> None:
        """End the trace with the `account` event (in the room kept for it after a failed
        write); when even that cannot be written, say the account on stderr."""
        encoder = self._encoder
        streams = encoder.state()
        fields = account.event_fields(streams, writer="writer")
        event = encode_event("account", **fields)
        if not self._sink.write_last(lambda seq: encode_record(seq, encoder.t, "tap", event)):
            self._say(f"the trace does not hold its account: {account.describe(streams)}")
        self._publish()

    def _publish(self) -> None:
        sink, ctl = self._sink, self._ring.ctl
        ctl[WRITTEN] = sink.written
        ctl[LOST] = sink.lost
        ctl[DROPPED] = self._encoder.dropped
        state = WriterState(
            sink.good,
            sink.last_seq,
            self._encoder.t,
            self._reader.taken(),
            self._reader.offset(),
            sink.stopped,
            self._backlog.start if self._backlog is not None else 0,
            self._backlog.end if self._backlog is not None else 0,
            self._encoder.state(),
        )
        account.publish(self._ring, state)


def rfc3339(wall_ns: int) -> str:
    """A wall-clock time in ns as RFC 3339 UTC with microseconds (the header's started_at)."""
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=wall_ns // 1000)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run_writer(
    ring: Ring,
    target: TraceTarget,
    wake_fd: int,
    watchdog: Watchdog,
    *,
    options: RecordOptions,
    t0: int,
    header: Callable[[], bytes],
    reader: RingReader | None = None,
    backlog: Backlog | None = None,
) -> None:
    """The writer process's work (writer_process.start_writer forks it): open the trace if the
    tap could not (a FIFO without a reader), then record until the recording ends."""
    policy = RedactionPolicy(options.redact, tuple(options.redact_stderr), options.redact_content)
    encoder = Encoder(redact=Redactor(policy), max_bytes=options.max_record_bytes, t0=t0)

    def say(message: str) -> None:
        ring.post(message)
        if watchdog.tap_gone.is_set():  # nobody relays it any more
            os.write(2, f"acp-trace: {message}\n".encode("utf-8", "replace"))

    writer = Writer(ring, encoder, wake_fd, say, reader, backlog)
    watchdog.start(writer.late_event, writer.finished)  # before an open that may wait
    sink = TraceSink.open(target, say, encoder.event_line)
    writer.run(sink, header(), watchdog)


def encode_item(item: Item, *, redact: bool | Redactor, max_bytes: int | None) -> bytes:
    """The trace line (with newline) for one stamped item (code that writes traces directly)."""
    if item.event is not None:
        return encode_record(item.seq, item.t_ns, "tap", encode_event(**item.event))
    payload = line_payload(item.data, item.src, redact=redact, max_bytes=max_bytes)
    if not item.eol:
        payload = b'"eol":false,' + payload
    return encode_record(item.seq, item.t_ns, item.src, payload)
