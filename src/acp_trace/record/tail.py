"""Finishing the trace in the writer's place, when the tap had to stop a stalled writer (or
the writer died): the account of what was not written still reaches the trace.

The writer publishes, after each write, where its whole records end and its account so far
(account.py). The tap cuts the trace back to that point (a killed writer may have left part
of a line after it), counts the lines of the frames the writer had not taken (those it had
moved to its backlog first, backlog.py, then those still in the ring), as the writer
would have (a line is counted at its newline or at its stream's end), and appends the tap
events among them (`eof`, `exit`, ...), an `error` event (cause `writer`) that says why, and
the `account`. Only a regular trace is finished so; a FIFO or a device that took nothing more
would not take these lines either: the account goes to stderr only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from acp_trace.record import account
from acp_trace.record.account import StreamAccount, WriterState
from acp_trace.record.backlog import read_frames
from acp_trace.record.ring import CHUNK, CLOSE, END, EVENT, GAP_KIND, Frame, Ring
from acp_trace.record.ring_reader import RingReader


@dataclass
class Tail:
    """The end of a recording as the tap saw it: the accounts, and the tap events the writer
    never took (with their `t_ns`)."""

    state: WriterState
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    @property
    def streams(self) -> dict[str, StreamAccount]:
        return self.state.streams

    def unwritten(self) -> int:
        return sum(acc.unwritten for acc in self.streams.values())


def count_unread(
    ring: Ring, t0: int, gaps: list[tuple[str, int, int, bool]], backlog_fd: int | None = None
) -> Tail:
    """The writer's last published state plus the frames it had not taken, from its backlog
    (`backlog_fd`) and then the ring (and `gaps`: the chunks dropped after the last frame
    that went in), every stream then ended."""
    tail = Tail(account.read(ring) or WriterState())
    state = tail.state
    closed = False
    if backlog_fd is not None and state.backlog_end > state.backlog_start:
        try:
            backlog = read_frames(backlog_fd, state.backlog_start, state.backlog_end)
            closed = _count(tail, (frame for frame, _after in backlog), t0)
        except (OSError, ValueError):  # the writer wrote those frames whole: not expected
            pass
    if not closed:
        with suppress(ValueError):  # a frame torn by the stopped writer's last release
            _count(tail, RingReader(ring, state.taken, state.taken_at).frames(ring.size), t0)
    streams = tail.streams
    for src, lost, newlines, ended in gaps:
        _gap(streams[src], lost, newlines, ended)
    for acc in streams.values():
        _end(acc)
    return tail


def _count(tail: Tail, frames: Iterator[Frame], t0: int) -> bool:
    """Count `frames` into `tail`; True when they reached the recording's CLOSE."""
    streams = tail.streams
    for frame in frames:
        if frame.kind == CLOSE:
            return True
        if frame.kind == EVENT:
            tail.events.append((max(frame.t - t0, 0), frame.event()))
            continue
        acc = streams.get(frame.src)
        if acc is None:
            continue
        if frame.kind == CHUNK:
            _chunk(acc, frame.data)
        elif frame.kind == GAP_KIND:
            _gap(acc, *frame.gap())
        elif frame.kind == END:
            _end(acc)
    return False


def _chunk(acc: StreamAccount, data: bytes) -> None:
    acc.bytes += len(data)
    newlines = data.count(b"\n")
    if newlines:
        acc.lines += newlines
        acc.unwritten += newlines - (1 if acc.skipping else 0)  # a skipped line is dropped
        acc.skipping = False
        acc.pending = not data.endswith(b"\n")
    elif data and not acc.skipping:
        acc.pending = True


def _gap(acc: StreamAccount, lost: int, newlines: int, ended: bool) -> None:
    acc.bytes += lost
    acc.lines += newlines
    acc.dropped += newlines + (0 if ended else 1) - (1 if acc.skipping else 0)
    acc.pending, acc.skipping = False, not ended


def _end(acc: StreamAccount) -> None:
    if acc.pending or acc.skipping:
        acc.lines += 1
        acc.unwritten += 1 if acc.pending else 0
    acc.pending = acc.skipping = False


def write_tail(fd: int, tail: Tail, reason: str, header: Callable[[], bytes]) -> bool:
    """Cut the trace back to the writer's last whole record and append the events it never
    took, an `error` event saying `reason`, and the account; False when that failed."""
    from acp_trace.trace.format import encode_event, encode_record

    state = tail.state
    seq, t = state.seq, state.t
    lines = [] if state.good else [header()]
    for t_ns, fields in tail.events:
        name = str(fields.pop("event", "error"))
        seq, t = seq + 1, max(t, t_ns)
        lines.append(encode_record(seq, t, "tap", encode_event(name, **fields)))
    message = f"{reason}: {account.describe(tail.streams)}"
    lines.append(
        encode_record(seq + 1, t, "tap", encode_event("error", message=message, cause="writer"))
    )
    fields = account.event_fields(tail.streams, writer="tap")
    lines.append(encode_record(seq + 2, t, "tap", encode_event("account", **fields)))
    try:
        os.ftruncate(fd, state.good)
        os.lseek(fd, state.good, os.SEEK_SET)
        data = memoryview(b"".join(lines))
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return False
    return True
