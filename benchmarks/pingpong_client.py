"""A ping-pong client for the tap benchmarks: send a line, wait for its echo, time the round trip.

    pingpong_client.py --size 200 --count 1000 -- python benchmarks/echo_agent.py
    pingpong_client.py --size 200 --count 1000 -- acp-trace record -o t.jsonl -- python ...

Prints one JSON object: the size and every round trip in nanoseconds (after --warmup).
`Peer` is also used by bench_tap.py, which keeps several peers alive and alternates pings.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time


def ping_line(index: int, size: int) -> bytes:
    """A JSON-RPC request of exactly `size` bytes, newline included (size >= 100)."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"bench/ping","params":{"pad":"' % index
    tail = b'"}}\n'
    pad = size - len(head) - len(tail)
    if pad < 0:
        raise SystemExit(f"--size {size} is too small")
    return head + b"x" * pad + tail


class Peer:
    """An agent command behind pipes; `ping` sends a line and returns the round trip in ns."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buffer = bytearray()

    def ping(self, line: bytes) -> int:
        start = time.perf_counter_ns()
        view = memoryview(line)
        while view:
            view = view[os.write(self.wfd, view) :]
        self.read_line(len(line))
        return time.perf_counter_ns() - start

    def read_line(self, size: int) -> bytes:
        """Read until one whole line of `size` bytes is in; returns it."""
        while len(self.buffer) < size:
            chunk = os.read(self.rfd, max(size - len(self.buffer), 65536))
            if not chunk:
                raise RuntimeError("the agent closed its stdout")
            self.buffer += chunk
        line = bytes(self.buffer[:size])
        if not line.endswith(b"\n"):
            raise RuntimeError("the echo is not the line that was sent")
        del self.buffer[:size]
        return line

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200, help="bytes per message, newline included")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("command", nargs="+", help="the agent command, after --")
    args = parser.parse_args()
    peer = Peer(args.command)
    rtts = [peer.ping(ping_line(i, args.size)) for i in range(args.warmup + args.count)]
    peer.close()
    print(json.dumps({"size": args.size, "rtt_ns": rtts[args.warmup :]}))


if __name__ == "__main__":
    main()
