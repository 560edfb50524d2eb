"""The account (account.py, tail.py): the tap's count of what a stopped writer left in the ring
matches, line for line, what the writer itself would have recorded and dropped."""

from __future__ import annotations

import random

import pytest

from acp_trace.record import account
from acp_trace.record.account import StreamAccount, WriterState
from acp_trace.record.ring import Ring, RingWriter
from acp_trace.record.ring_reader import RingReader
from acp_trace.record.tail import count_unread
from acp_trace.record.writer import Encoder


def _traffic(seed: int) -> list[tuple[str, bytes, bool]]:
    """Reads of random sizes (some lost, as a full ring loses them) on two streams."""
    chance = random.Random(seed)
    reads = []
    for _ in range(200):
        src = chance.choice(("client", "agent"))
        data = bytes(chance.choice(b"ab\n") for _ in range(chance.randrange(1, 40)))
        reads.append((src, data, chance.random() < 0.15))
    return reads


def _fill(reads: list[tuple[str, bytes, bool]]) -> Ring:
    ring = Ring(1 << 20)
    out = RingWriter(ring)
    for t, (src, data, lost) in enumerate(reads, 1):
        if lost:
            out.lose(src, data)
        else:
            out.chunk(src, t, data)
    out.end("client", 10_000)
    out.event(10_001, "exit", code=0, signal=None)
    return ring


@pytest.mark.parametrize("seed", range(8))
def test_the_taps_count_of_unread_frames_is_the_writers(seed: int) -> None:
    """Random reads with dropped ones: the lines the tap counts as unwritten (nothing taken)
    are the records the writer makes of the same frames; `lines` and `dropped` agree too."""
    reads = _traffic(seed)
    encoder = Encoder(redact=False, max_bytes=1 << 20, t0=0)
    out: list[bytes] = []
    for frame in RingReader(_fill(reads)).frames(1 << 30):
        encoder.frame(frame, out)
    encoder.finish(out)
    tail = count_unread(_fill(reads), 0, [])
    for src in ("client", "agent"):
        mine, theirs = tail.streams[src], encoder.accounts[src]
        assert (mine.lines, mine.dropped) == (theirs.lines, theirs.dropped), src
        assert mine.unwritten == theirs.recorded and mine.recorded == 0
        assert theirs.recorded + theirs.dropped == theirs.lines
    assert [fields["event"] for _t, fields in tail.events] == ["exit"]


def test_a_published_state_survives_and_the_rest_is_counted() -> None:
    """The writer's published state (two copies) is read back whole; the tap adds what lies
    after it: the account balances."""
    ring = Ring(1 << 20)
    state = WriterState(good=100, seq=3, t=5, taken=0, taken_at=0)
    state.streams["client"] = StreamAccount(lines=2, recorded=2, bytes=4)
    account.publish(ring, state)
    account.publish(ring, state)
    assert account.read(ring) == state
    out = RingWriter(ring)
    out.chunk("client", 1, b"x\ny")
    tail = count_unread(ring, 0, [("agent", 10, 1, False)])
    client, agent = tail.streams["client"], tail.streams["agent"]
    assert (client.lines, client.recorded, client.unwritten) == (4, 2, 2)
    assert (agent.lines, agent.dropped) == (2, 2)  # the gap's line, and its unfinished one
    assert account.unbalanced(tail.streams) == []
