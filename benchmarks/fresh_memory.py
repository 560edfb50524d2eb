"""What a MiB of memory written for the first time costs on this machine, against a MiB
written again (issue 34: the ring's page faults, the writer's backlog).

    .venv/bin/python benchmarks/fresh_memory.py [--mib 256] [--rounds 3]

Per round, 256 MiB written in 1 MiB blocks into: a shared anonymous mapping (the tap's ring),
a private one, a memfd (the writer's backlog), and a file's page cache in the temporary
folder; first into fresh memory, then again. Prints milliseconds per MiB (medians) and each
against writing into memory already in use.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import tempfile
import time

BLOCK = 1 << 20


def _mapping(flags: int, mib: int) -> tuple[float, float]:
    block, size = b"x" * BLOCK, mib * BLOCK
    area = mmap.mmap(-1, size, flags=flags)
    try:
        times = []
        for _ in range(2):
            start = time.perf_counter()
            for at in range(0, size, BLOCK):
                area[at : at + BLOCK] = block
            times.append((time.perf_counter() - start) * 1e3 / mib)
        return times[0], times[1]
    finally:
        area.close()


def _file(fd: int, mib: int) -> tuple[float, float]:
    block = b"x" * BLOCK
    times = []
    for _ in range(2):
        start = time.perf_counter()
        for n in range(mib):
            os.pwrite(fd, block, n * BLOCK)
        times.append((time.perf_counter() - start) * 1e3 / mib)
    os.close(fd)
    return times[0], times[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kinds = {
        "shared mapping (the ring)": lambda: _mapping(mmap.MAP_SHARED, args.mib),
        "private mapping": lambda: _mapping(mmap.MAP_PRIVATE, args.mib),
        "memfd (the backlog)": lambda: _file(os.memfd_create("bench"), args.mib),
        "file on disk (page cache)": lambda: _file(
            os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR, 0o600), args.mib
        ),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    for _ in range(args.rounds):
        for name, run in kinds.items():
            results[name].append(run())
    print(f"ms per MiB written, {args.mib} MiB in 1 MiB blocks, median of {args.rounds} rounds")
    for name, pairs in results.items():
        fresh = statistics.median(p[0] for p in pairs)
        again = statistics.median(p[1] for p in pairs)
        print(
            f"  {name:28} fresh {fresh:6.3f}   again {again:6.3f}   fresh / again {fresh / again:5.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
