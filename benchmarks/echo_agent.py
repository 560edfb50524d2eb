"""A stand-in ACP agent for the tap benchmarks: echo, burst or timed writes on stdout.

    echo_agent.py                      echo every line read on stdin at once (ping-pong)
    echo_agent.py --burst BYTES --line-size N
                                       write a ready line; after one line on stdin, write BYTES of N-byte JSON-RPC
                                       lines as fast as the pipe takes them, then exit
    echo_agent.py --timed COUNT --interval-us US --line-size N --log FILE
                                       write a ready line; after one line on stdin, write COUNT lines US apart and
                                       log time.monotonic_ns() taken just before each write
                                       (plus a wall-clock/monotonic pair for mapping clocks)
    echo_agent.py --ticks --interval-us US
                                       write a ready line, then a line {"t": monotonic ns} every US
                                       while it reads (and drops) stdin; exit at stdin's EOF
    echo_agent.py --replay FILE        write a ready line; after one line on stdin (the resume),
                                       write FILE (history lines: replay_history.py) as fast as the
                                       pipe takes it, then the response, and exit

Standard library only, unbuffered writes with os.write.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def message(index: int, size: int) -> bytes:
    """A session/update notification of exactly `size` bytes, newline included (size >= 120)."""
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":'
    head += (
        b'{"sessionUpdate":"agent_message_chunk","n":%d,"content":{"type":"text","text":"' % index
    )
    tail = b'"}}}}\n'
    pad = size - len(head) - len(tail)
    if pad < 0:
        raise SystemExit(f"--line-size {size} is too small (at least {len(head) + len(tail)})")
    return head + b"x" * pad + tail


def echo() -> None:
    stdin = sys.stdin.buffer
    while line := stdin.readline():
        write_all(1, line)


READY = b'{"jsonrpc":"2.0","method":"bench/ready"}\n'


def burst(total: int, size: int) -> None:
    """Write burst_lines(total, size) lines of `size` bytes, in blocks of about 1 MiB."""
    write_all(1, READY)
    sys.stdin.buffer.readline()
    line = message(0, size)
    left = burst_lines(total, size)
    per_block = max(1, (1 << 20) // size)
    block = line * per_block
    while left >= per_block:
        write_all(1, block)
        left -= per_block
    write_all(1, line * left)


def burst_lines(total: int, size: int) -> int:
    """How many lines of `size` bytes a burst of about `total` bytes writes (at least one)."""
    return max(1, total // size)


def clock_pair() -> tuple[int, int]:
    """(wall ns, monotonic ns) read as close together as this process can (best of 50)."""
    best: tuple[int, int, int] | None = None
    for _ in range(50):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, wall, (before + after) // 2)
    assert best is not None
    return best[1], best[2]


def timed(count: int, interval_us: int, size: int, log: str) -> None:
    wall, mono = clock_pair()
    write_all(1, READY)
    sys.stdin.buffer.readline()
    lines = [message(i, size) for i in range(count)]
    stamps: list[int] = []
    due = time.monotonic_ns()
    for line in lines:
        due += interval_us * 1000
        while (now := time.monotonic_ns()) < due:
            if due - now > 200_000:
                time.sleep((due - now - 150_000) / 1e9)
        stamps.append(time.monotonic_ns())
        write_all(1, line)
    with open(log, "w") as handle:
        json.dump({"wall_ns": wall, "mono_ns": mono, "writes": stamps}, handle)


def ticks(interval_us: int) -> None:
    """Tick while reading stdin to its end (bench_tap.py `stall`)."""
    done = threading.Event()

    def read() -> None:
        while os.read(0, 1 << 20):
            pass
        done.set()

    threading.Thread(target=read, daemon=True).start()
    write_all(1, READY)
    while not done.wait(interval_us / 1e6):
        write_all(1, b'{"t":%d}\n' % time.monotonic_ns())


RESPONSE = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def replay(path: str) -> None:
    """Replay a history file in blocks of 1 MiB, then answer the resume (bench_tap `replay`)."""
    write_all(1, READY)
    sys.stdin.buffer.readline()
    with open(path, "rb") as history:
        while block := history.read(1 << 20):
            write_all(1, block)
    write_all(1, RESPONSE)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--burst", type=int, help="bytes to write after one line on stdin")
    parser.add_argument("--timed", type=int, help="lines to write, --interval-us apart")
    parser.add_argument("--line-size", type=int, default=4096)
    parser.add_argument("--interval-us", type=int, default=1000)
    parser.add_argument("--log", help="where --timed writes its stamps (JSON)")
    parser.add_argument("--ticks", action="store_true", help="tick while reading stdin")
    parser.add_argument("--replay", help="a history file to replay after one line on stdin")
    args = parser.parse_args()
    if args.replay is not None:
        replay(args.replay)
    elif args.burst is not None:
        burst(args.burst, args.line_size)
    elif args.ticks:
        ticks(args.interval_us)
    elif args.timed is not None:
        timed(args.timed, args.interval_us, args.line_size, args.log)
    else:
        echo()


if __name__ == "__main__":
    main()
