"""The ring's memory: faulted in ahead of the pumps, given back when the ring is idle."""

from __future__ import annotations

import ctypes
import time

import pytest

from acp_trace.record import ring_memory
from acp_trace.record.ring import CHUNK, Ring, RingWriter
from acp_trace.record.ring_reader import RingReader


def resident_kib(ring: Ring) -> int:
    """KiB of the ring's shared memory resident in this process (from /proc/self/smaps)."""
    address = ctypes.addressof(ctypes.c_char.from_buffer(ring.map))
    with open("/proc/self/smaps") as smaps:
        text = smaps.read().split("\n")
    for i, line in enumerate(text):
        if int(line.split("-")[0], 16) == address if "-" in line.split(" ")[0] else False:
            for field in text[i + 1 : i + 30]:
                if field.startswith("Rss:"):
                    return int(field.split()[1])
    raise AssertionError("the ring's mapping is not in smaps")


def test_an_idle_ring_gives_its_memory_back_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a burst the pages beyond KEEP are freed once the ring is idle and empty; frames
    put after that come back in order, and memory grows again only with traffic."""
    if ring_memory._madvise() is None:
        pytest.skip("no madvise through ctypes here")
    monkeypatch.setattr(ring_memory, "IDLE", 0.0)
    ring = Ring(64 << 20)
    out, reader = RingWriter(ring), RingReader(ring)

    def writer_takes_all() -> None:  # what waking the writer process leads to
        list(reader.frames(1 << 30))
        reader.release()

    memory = ring_memory.RingMemory(ring, out, writer_takes_all)
    block = b"b" * 65536
    for n in range(600):  # about 39 MiB, the writer behind: past WARM, into the cold pages
        out.chunk("agent", n, block)
        if n == 50:
            list(reader.frames(1 << 30))
            reader.release()
    list(reader.frames(1 << 30))
    reader.release()
    before = resident_kib(ring)
    assert not memory.maybe_trim()  # the first look only notes the position
    assert memory.maybe_trim()
    after = resident_kib(ring)
    assert before > 30 << 10 and after <= (ring_memory.KEEP >> 10) + 64
    sent = [bytes([n % 251]) * 70000 for n in range(300)]
    got = []
    for n, data in enumerate(sent):
        out.chunk("client", 1000 + n, data)
        got += [f.data for f in reader.frames(1 << 30) if f.kind == CHUNK]
        reader.release()
    assert got == sent and out.limit == ring.size


def test_a_ring_that_is_not_empty_keeps_its_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames the writer has not taken stay where they are: nothing is given back."""
    monkeypatch.setattr(ring_memory, "IDLE", 0.0)
    ring = Ring(64 << 20)
    out = RingWriter(ring)
    memory = ring_memory.RingMemory(ring, out, lambda: None)
    for n in range(400):
        out.chunk("agent", n, b"c" * 65536)
    memory.maybe_trim()
    assert not memory.maybe_trim() and out.limit == ring.size
    frames = list(RingReader(ring).frames(1 << 30))
    assert len(frames) == 400 and all(f.data == b"c" * 65536 for f in frames)


def test_pages_are_faulted_in_ahead_of_the_pumps() -> None:
    """Past AFTER bytes of traffic, a thread faults pages in LEAD bytes ahead of the write
    position (they are resident before the pumps reach them)."""
    if ring_memory._madvise() is None:
        pytest.skip("no madvise through ctypes here")
    ring = Ring(64 << 20)
    out = RingWriter(ring)
    ring_memory.RingMemory(ring, out, lambda: None).start()
    for n in range(40):  # 2.5 MiB
        out.chunk("agent", n, b"p" * 65536)
    deadline = time.monotonic() + 30
    while resident_kib(ring) < (ring_memory.LEAD >> 10) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert resident_kib(ring) >= ring_memory.LEAD >> 10
