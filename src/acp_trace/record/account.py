"""The account of a recording: per stream, the lines read and what became of each one.

Every line the tap read (and forwarded) is, at the end, exactly one of: `recorded` (a record
in the trace), `dropped` (a full ring made the tap drop it, told by a `dropped` event) or
`unwritten` (handed to the writer, but the trace could not take it: a failed write, a trace
removed, a writer stopped). A line is counted when it ends: at its newline, or at the
stream's end for an unfinished last line. The trace ends with an `account` event holding
these numbers (docs/trace-format.md), written by the writer process or, when the tap had to
stop a stalled writer, by the tap itself (tail.py).

The writer publishes what it has written so far in the ring's control page (`publish`, two
copies and the index of the whole one, so a writer killed in the middle of publishing leaves
the previous copy readable); the tap reads it (`read`) when it must finish in its place.
"""

from __future__ import annotations

from acp_trace.quantities import count
from acp_trace.record.ring import STATE_AT, STATE_INDEX, Ring, fence

STREAMS = ("client", "agent", "stderr")
COUNTS = ("lines", "recorded", "dropped", "unwritten", "bytes")


class _Plain:
    """Equality and repr by the slots, as dataclasses give them (a plain class: the writer
    publishes its state before it has imported `dataclasses`, backlog.py)."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclasses were

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"


class StreamAccount(_Plain):
    """One stream's numbers; `skipping` and `pending` are the writer's state of the line it is
    in (the rest of a line whose start was dropped; the start of an unfinished line)."""

    __slots__ = (*COUNTS, "pending", "skipping")

    def __init__(
        self,
        lines: int = 0,
        recorded: int = 0,
        dropped: int = 0,
        unwritten: int = 0,
        bytes: int = 0,
        skipping: bool = False,
        pending: bool = False,
    ) -> None:
        self.lines, self.recorded, self.dropped, self.unwritten = (
            lines,
            recorded,
            dropped,
            unwritten,
        )
        self.bytes, self.skipping, self.pending = bytes, skipping, pending

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}


class WriterState(_Plain):
    """What the writer had written when it last published: the trace's whole records end at
    byte `good` (a regular file), the last one has `seq` and `t`; it had taken the ring up to
    `taken` (offset `taken_at`); `stopped` when its trace takes nothing more; the frames it
    had moved to its backlog and not yet encoded lie between `backlog_start` and
    `backlog_end` of the backlog file (backlog.py)."""

    __slots__ = (
        "backlog_end",
        "backlog_start",
        "good",
        "seq",
        "stopped",
        "streams",
        "t",
        "taken",
        "taken_at",
    )

    def __init__(
        self,
        good: int = 0,
        seq: int = 0,
        t: int = 0,
        taken: int = 0,
        taken_at: int = 0,
        stopped: bool = False,
        backlog_start: int = 0,
        backlog_end: int = 0,
        streams: dict[str, StreamAccount] | None = None,
    ) -> None:
        self.good, self.seq, self.t, self.taken, self.taken_at = good, seq, t, taken, taken_at
        self.stopped, self.backlog_start, self.backlog_end = stopped, backlog_start, backlog_end
        self.streams = {src: StreamAccount() for src in STREAMS} if streams is None else streams


_HEAD = 8  # good, seq, t, taken, taken_at, stopped, backlog_start, backlog_end
_PER_STREAM = len(COUNTS) + 2


def publish(ring: Ring, state: WriterState) -> None:
    """Write `state` into the copy not in use, then make it the one in use."""
    current = ring.ctl[STATE_INDEX]
    at = STATE_AT[0 if current == 2 else 1]
    ctl = ring.ctl
    head = (
        state.good,
        state.seq,
        state.t,
        state.taken,
        state.taken_at,
        int(state.stopped),
        state.backlog_start,
        state.backlog_end,
    )
    for i, value in enumerate(head):
        ctl[at + i] = value
    at += _HEAD
    for src in STREAMS:
        acc = state.streams[src]
        for i, name in enumerate(COUNTS):
            ctl[at + i] = getattr(acc, name)
        ctl[at + len(COUNTS)] = int(acc.skipping)
        ctl[at + len(COUNTS) + 1] = int(acc.pending)
        at += _PER_STREAM
    fence()
    ring.ctl[STATE_INDEX] = 1 if current == 2 else 2


def read(ring: Ring) -> WriterState | None:
    """The state the writer last published whole, or None if it published none."""
    index = ring.ctl[STATE_INDEX]
    fence()
    if index not in (1, 2):
        return None
    ctl, at = ring.ctl, STATE_AT[index - 1]
    good, seq, t, taken, taken_at, stopped, start, end = (ctl[at + i] for i in range(_HEAD))
    state = WriterState(good, seq, t, taken, taken_at, bool(stopped), start, end)
    at += _HEAD
    for src in STREAMS:
        acc = state.streams[src]
        for i, name in enumerate(COUNTS):
            setattr(acc, name, ctl[at + i])
        acc.skipping = bool(ctl[at + len(COUNTS)])
        acc.pending = bool(ctl[at + len(COUNTS) + 1])
        at += _PER_STREAM
    return state


def event_fields(streams: dict[str, StreamAccount], *, writer: str) -> dict[str, object]:
    """The fields of the `account` event (`writer`: `writer`, or `tap` when the tap wrote it)."""
    return {"streams": {src: streams[src].counts() for src in STREAMS}, "by": writer}


def unbalanced(streams: dict[str, StreamAccount]) -> list[str]:
    """The streams whose recorded + dropped + unwritten is not their lines (a bug)."""
    return [
        src
        for src, acc in streams.items()
        if acc.recorded + acc.dropped + acc.unwritten != acc.lines
    ]


def describe(streams: dict[str, StreamAccount]) -> str:
    """`client 120 lines (100 recorded, 20 not written), agent ...` for a person."""
    parts = []
    for src in STREAMS:
        acc = streams[src]
        if not acc.lines:
            continue
        detail = [f"{count(acc.recorded)} recorded"]
        if acc.dropped:
            detail.append(f"{count(acc.dropped)} dropped")
        if acc.unwritten:
            detail.append(f"{count(acc.unwritten)} not written")
        parts.append(f"{src} {count(acc.lines)} lines ({', '.join(detail)})")
    return "; ".join(parts) or "no lines"
