"""The shared-memory ring between the tap's pumps and its writer process."""

from __future__ import annotations

import random

from acp_trace.record import ring as ringmod
from acp_trace.record.ring import CHUNK, CLOSE, END, EVENT, GAP_KIND, Ring, RingWriter
from acp_trace.record.ring_reader import RingReader, unread_lines


def take_all(reader: RingReader) -> list[ringmod.Frame]:
    frames = list(reader.frames(1 << 30))
    reader.release()
    return frames


def test_frames_come_back_in_order_across_many_wraps() -> None:
    """Chunks of every size, put and taken in turns over a small ring, come back byte for byte
    in order, with their source and stamp, however often the ring wraps."""
    chance = random.Random(1)
    ring = Ring(1 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    sent, got = [], []
    for n in range(3000):
        data = chance.randbytes(chance.choice((0, 1, 15, 16, 17, 4096, 65536)))
        src = chance.choice(("client", "agent", "stderr"))
        out.chunk(src, n, data)
        sent.append((src, n, data))
        if chance.random() < 0.3:
            got += [(f.src, f.t, f.data) for f in take_all(reader) if f.kind == CHUNK]
    got += [(f.src, f.t, f.data) for f in take_all(reader) if f.kind == CHUNK]
    assert got == sent and out.dropped_chunks == 0


def test_stamps_never_go_back_in_ring_order() -> None:
    """A read stamped earlier but handed on later (it lost the race for the lock) takes the
    stamp of the frame before it: ring order is t order."""
    ring = Ring(1 << 20)
    out = RingWriter(ring)
    out.chunk("agent", 200, b"a")
    out.chunk("client", 100, b"b")
    out.event(150, "eof", stream="client")
    assert [f.t for f in take_all(RingReader(ring))] == [200, 200, 200]


def test_a_full_ring_drops_chunks_and_the_next_frame_says_what_was_lost() -> None:
    """When the writer is behind, chunks are dropped (never waited for) and counted per stream;
    the first chunk that fits again is preceded by one GAP per stream with the bytes, newlines
    and whether the last dropped chunk ended a line."""
    ring = Ring(1 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    block = b"x" * 1000 + b"\n"
    while out.dropped_chunks == 0:
        out.chunk("agent", 1, block * 60)
    out.chunk("client", 2, b"half a line" * 6000)  # does not fit either
    out.chunk("agent", 3, b"tail")
    *kept, gap_agent, gap_client, tail = take_all(reader)
    assert all(f.kind == CHUNK for f in kept) and len(kept) > 10
    assert (gap_agent.kind, gap_agent.src, gap_client.src) == (GAP_KIND, "agent", "client")
    assert gap_agent.gap() == (len(block) * 60, 60, True)
    assert gap_client.gap() == (11 * 6000, 0, False)
    assert (tail.kind, tail.src, tail.data) == (CHUNK, "agent", b"tail")


def test_events_use_the_reserve_of_a_ring_full_of_traffic() -> None:
    """Traffic stops RESERVE bytes short of full, so the events that say what happened (eof,
    exit, the end of the recording) still fit."""
    ring = Ring(1 << 20)
    out = RingWriter(ring)
    while out.dropped_chunks == 0:
        out.chunk("agent", 1, b"y" * 65536)
    assert out.event(2, "eof", stream="agent") and out.end("agent", 3) and out.close(4)
    kinds = [f.kind for f in take_all(RingReader(ring))]
    assert kinds[-3:] == [EVENT, END, CLOSE] and out.lost_events == 0


def test_unread_lines_counts_what_a_stopped_writer_left() -> None:
    """The lines and events in frames not yet released are what a killed writer did not
    write."""
    ring = Ring(1 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    out.chunk("agent", 1, b"a\nb\n")
    take_all(reader)
    out.chunk("agent", 2, b"c\nd\ne")
    out.event(3, "exit", code=0, signal=None)
    assert unread_lines(ring) == 3


def test_messages_from_the_writer_reach_the_tap_once_each() -> None:
    """Messages posted by the writer are read back in order, each once."""
    ring = Ring(1 << 20)
    ring.post("first")
    messages, at = ring.messages(0)
    ring.post("second é")
    more, _ = ring.messages(at)
    assert (messages, more) == (["first"], ["second é"])
