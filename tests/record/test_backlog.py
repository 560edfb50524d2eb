"""The writer's backlog (backlog.py) and the warm ring (ring.py, WARM): frames moved out of the
ring come back whole and in order, the tap counts what a stopped writer left in both, a
backlog that cannot grow is given up without losing a frame, its memory is given back, and a
writer that keeps up keeps the pumps on the ring's first WARM bytes."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_trace.record import account
from acp_trace.record import backlog as backlog_module
from acp_trace.record.account import WriterState
from acp_trace.record.backlog import SPILL_AT, Backlog, keep_up, publish_position, read_frames
from acp_trace.record.ring import CHUNK, RING_BYTES, WARM, Frame, Ring, RingWriter
from acp_trace.record.ring_reader import RingReader
from acp_trace.record.sink import TraceSink
from acp_trace.record.tail import count_unread
from acp_trace.record.writer import Encoder, Writer
from acp_trace.record.writer_process import create_backlog


@pytest.fixture
def memfd() -> Iterator[int]:
    fd = create_backlog()
    if fd is None:
        pytest.skip("no memfd_create here")
    yield fd
    os.close(fd)


def _reads(seed: int, count: int = 400) -> list[tuple[str, bytes]]:
    """Reads of random sizes (up to 64 KiB, the pumps' largest) on three streams."""
    chance = random.Random(seed)
    reads = []
    for n in range(count):
        src = chance.choice(("client", "agent", "stderr"))
        size = chance.choice((1, 17, 900, 4096, 65536))
        reads.append((src, bytes([n % 251]) * (size - 1) + b"\n"))
    return reads


def _key(frame: Frame) -> tuple[int, str, bytes]:
    return frame.kind, frame.src, frame.data


@pytest.mark.parametrize("seed", range(4))
def test_frames_moved_to_the_backlog_come_back_whole_and_in_order(memfd: int, seed: int) -> None:
    """A small ring that wraps many times; the reader moves what waits to the backlog at
    random moments and takes some back: every frame comes back once, in the order put."""
    ring = Ring(1 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    pool = Backlog(memfd, 64 << 20)
    chance = random.Random(seed)
    put: list[tuple[int, str, bytes]] = []
    got: list[tuple[int, str, bytes]] = []
    for t, (src, data) in enumerate(_reads(seed), 1):
        out.chunk(src, t, data)
        put.append((CHUNK, src, data))
        if chance.random() < 0.2:
            assert pool.spill(reader) > 0
            reader.release()
        if chance.random() < 0.1:
            got += [_key(f) for f in pool.frames(chance.choice((1, 70_000, 1 << 20)))]
            pool.release()
    assert out.dropped_chunks == 0  # the ring never filled: the test moved what waited
    pool.spill(reader)
    reader.release()
    got += [_key(f) for f in pool.frames(1 << 30)]
    pool.release()
    assert got == put
    assert pool.held == 0 and os.fstat(memfd).st_size == 0  # drained: all memory given back


def test_the_taps_count_covers_the_backlog_then_the_ring(memfd: int) -> None:
    """A writer stopped with frames in its backlog and in the ring: the tap counts both, in
    order, as the writer would have recorded them."""
    reads = [(src, data[:30]) for src, data in _reads(7, 300)]
    encoder = Encoder(redact=False, max_bytes=1 << 20, t0=0)
    records: list[bytes] = []
    ring = Ring(1 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    pool = Backlog(memfd, 64 << 20)
    for t, (src, data) in enumerate(reads[:200], 1):
        out.chunk(src, t, data)
    assert keep_up(reader, pool, lambda: publish_position(ring, reader, pool)) == 0  # not behind
    pool.spill(reader)  # as if it were
    reader.release()
    state = WriterState(taken=reader.taken(), taken_at=reader.offset())
    state.backlog_start, state.backlog_end = pool.start, pool.end
    account.publish(ring, state)
    for t, (src, data) in enumerate(reads[200:], 201):
        out.chunk(src, t, data)
    out.event(10_000, "exit", code=0, signal=None)
    tail = count_unread(ring, 0, [], memfd)
    for frame, _after in read_frames(memfd, pool.start, pool.end):
        encoder.frame(frame, records)
    for frame in reader.frames(1 << 30):
        encoder.frame(frame, records)
    encoder.finish(records)
    for src in ("client", "agent", "stderr"):
        mine, theirs = tail.streams[src], encoder.accounts[src]
        assert (mine.lines, mine.unwritten) == (theirs.lines, theirs.recorded), src
    assert [fields["event"] for _t, fields in tail.events] == ["exit"]


def test_keep_up_moves_what_waits_once_the_writer_is_behind(memfd: int) -> None:
    """Past SPILL_AT bytes waiting, the frames go to the backlog and the ring's room comes
    back; the published state says where they are."""
    ring = Ring(8 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    pool = Backlog(memfd, 64 << 20)
    block = b"k" * 65535 + b"\n"
    for t in range(SPILL_AT // len(block) + 4):
        out.chunk("agent", t, block)
    moved = keep_up(reader, pool, lambda: publish_position(ring, reader, pool))
    assert moved > SPILL_AT and reader.waiting() == 0 and pool.held == moved
    state = account.read(ring)
    assert state is not None
    assert (state.backlog_start, state.backlog_end) == (0, moved)
    assert state.taken == reader.taken()


def test_a_backlog_that_cannot_be_written_is_given_up_and_loses_nothing(tmp_path: Path) -> None:
    """A write that fails (here a file opened read-only) leaves the frames in the ring, where
    the writer takes them as before; the backlog is not tried again."""
    path = tmp_path / "ro"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        ring = Ring(1 << 20)
        out, reader = RingWriter(ring), RingReader(ring)
        pool = Backlog(fd, 64 << 20)
        sent = [bytes([65 + n % 26]) * 1000 + b"\n" for n in range(50)]
        for t, data in enumerate(sent):
            out.chunk("client", t, data)
        assert pool.spill(reader) == 0 and pool.failed
        assert pool.spill(reader) == 0
        assert [f.data for f in reader.frames(1 << 30)] == sent
    finally:
        os.close(fd)


def test_the_backlog_gives_back_the_memory_of_encoded_frames(memfd: int) -> None:
    """While it is in use, the memory below its head is given back in steps of PUNCH."""
    ring = Ring(64 << 20)
    out, reader = RingWriter(ring), RingReader(ring)
    pool = Backlog(memfd, 256 << 20)
    block = b"m" * 65535 + b"\n"
    for t in range(40 * 16):  # 40 MiB
        out.chunk("agent", t, block)
    pool.spill(reader)
    reader.release()
    taken = sum(len(f.data) for f in pool.frames(36 << 20))
    pool.release()
    allocated = os.fstat(memfd).st_blocks * 512
    if allocated >= 40 << 20:
        pytest.skip("this file system does not punch holes in a memfd")
    assert taken >= 32 << 20 and allocated <= (40 << 20) - backlog_module.PUNCH
    assert pool.room() >= (256 << 20) - (40 << 20) + backlog_module.PUNCH


def test_a_writer_that_keeps_up_keeps_the_pumps_on_warm_pages() -> None:
    """With the reader a few MiB behind, the producer goes back to offset 0 past WARM:
    nothing beyond it is ever written. With the reader far behind, frames go on into the
    ring as before (nothing is dropped for want of an early wrap)."""
    ring = Ring(RING_BYTES)
    out, reader = RingWriter(ring), RingReader(ring)
    block = b"w" * 65535 + b"\n"
    seen = 0
    for t in range((3 * WARM) // len(block)):
        out.chunk("agent", t, block)
        if t % 32 == 0:  # 2 MiB
            seen += sum(1 for f in reader.frames(1 << 30) if f.data == block)
            reader.release()
    seen += sum(1 for f in reader.frames(1 << 30) if f.data == block)
    reader.release()
    assert seen == (3 * WARM) // len(block) and out.dropped_chunks == 0
    assert out.touched <= WARM + 2 * len(block)
    behind = Ring(RING_BYTES)
    out = RingWriter(behind)
    for t in range((2 * WARM) // len(block)):
        out.chunk("agent", t, block)
    assert out.touched >= 2 * WARM - len(block) and out.dropped_chunks == 0


def test_the_writer_with_a_backlog_records_what_it_records_without(
    memfd: int, tmp_path: Path
) -> None:
    """The same frames, past SPILL_AT at once: the writer moves them to its backlog, then
    encodes them; the trace is the one a writer without a backlog writes."""

    def record(pool: Backlog | None, name: str) -> bytes:
        ring = Ring(16 << 20)
        out = RingWriter(ring)
        for t, (src, data) in enumerate(_reads(3, 300), 1):
            out.chunk(src, t, data)
        out.close(10_000)
        path = tmp_path / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        encoder = Encoder(redact=True, max_bytes=1 << 20, t0=0)
        sink = TraceSink(fd, path, lambda _m: None, encoder.event_line)
        sink.start(b'{"header":1}\n')
        writer = Writer(ring, encoder, os.open(os.devnull, os.O_RDONLY), None, None, pool)
        writer._sink = sink
        steps = 0
        while not encoder.closed and steps < 10_000:
            writer._step()
            steps += 1
            if pool is not None and steps == 1:
                assert pool.end > SPILL_AT  # the first look moved what waited
        sink.close()
        return path.read_bytes()

    assert record(Backlog(memfd, 64 << 20), "with") == record(None, "without")
