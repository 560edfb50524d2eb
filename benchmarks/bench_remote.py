"""The remote recorder's cost (`acp-trace record --listen`): added latency per message and
throughput through the proxy against a direct connection to the same endpoint, in one run.

- WebSocket round trip: a client sends a text frame of SIZE bytes and waits for its echo,
  COUNT times; the median round trip through the proxy minus the direct one is the latency
  the proxy adds per message (both directions recorded), and their ratio.
- SSE throughput: a GET of an event stream of MB megabytes in events of SIZE bytes (each a
  JSON-RPC message the proxy cuts out and records), MB/s through the proxy / direct.
- WebSocket throughput: MB megabytes of SIZE-byte frames echoed, client to agent and back.

Variants are interleaved (benchlib.rounds); figures are medians and ratios, never targets
that a test asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from benchlib import ROOT, Figure, load_figure, median, report, rounds

HERE = Path(__file__).resolve().parent
READY = re.compile(r" at (\S+):(\d+) \(Ctrl-C ends it\)")


def frame(size: int) -> str:
    pad = "x" * max(0, size - 60)
    return f'{{"jsonrpc":"2.0","method":"session/update","params":{{"t":"{pad}"}}}}'


async def ws_rtt(base: str, size: int, count: int) -> list[float]:
    text, times = frame(size), []
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"{base}/acp", max_msg_size=0) as ws,
    ):
        for _ in range(count):
            start = time.perf_counter()
            await ws.send_str(text)
            await ws.receive()
            times.append(time.perf_counter() - start)
    return times


async def ws_burst(base: str, size: int, total: int) -> float:
    text, n = frame(size), max(1, total // size)
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"{base}/acp", max_msg_size=0) as ws,
    ):
        start = time.perf_counter()

        async def send() -> None:
            for _ in range(n):
                await ws.send_str(text)

        sender = asyncio.ensure_future(send())
        for _ in range(n):
            await ws.receive()
        await sender
        return n * len(text) * 2 / (time.perf_counter() - start) / 1e6


async def sse_rate(base: str, size: int, total: int) -> float:
    count = max(1, total // size)
    async with aiohttp.ClientSession() as http:
        start = time.perf_counter()
        got = 0
        async with http.get(f"{base}/sse?count={count}&size={size}") as r:
            async for chunk in r.content.iter_any():
                got += len(chunk)
        return got / (time.perf_counter() - start) / 1e6


def start_upstream() -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "remote_upstream.py")], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())["port"]


def start_proxy(port: int, trace: Path) -> tuple[subprocess.Popen[bytes], str]:
    argv = [sys.executable, "-m", "acp_trace", "record", "--listen", "127.0.0.1:0"]
    argv += ["--upstream", f"ws://127.0.0.1:{port}/acp", "-o", str(trace)]
    env = {"PYTHONPATH": str(ROOT / "src")}
    import os

    process = subprocess.Popen(argv, stderr=subprocess.PIPE, env={**os.environ, **env})
    assert process.stderr is not None
    found = READY.search(process.stderr.readline().decode())
    assert found, "the recorder did not start"
    return process, f"http://{found.group(1)}:{found.group(2)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="bytes per message")
    parser.add_argument("--count", type=int, default=500, help="round trips per repetition")
    parser.add_argument("--mb", type=float, default=20.0, help="megabytes per throughput run")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    total = int(args.mb * 1e6)
    load_before = __import__("os").getloadavg()[0]
    upstream, port = start_upstream()
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    proxy, proxied = start_proxy(port, work / "trace.jsonl")
    bases = {"direct": f"http://127.0.0.1:{port}", "proxy": proxied}
    rtt: dict[str, list[float]] = {"direct": [], "proxy": []}
    sse: dict[str, list[float]] = {"direct": [], "proxy": []}
    burst: dict[str, list[float]] = {"direct": [], "proxy": []}
    try:
        for _rep, name in rounds(list(bases), args.reps):
            rtt[name] += asyncio.run(ws_rtt(bases[name], args.size, args.count))
            sse[name].append(asyncio.run(sse_rate(bases[name], args.size, total)))
            burst[name].append(asyncio.run(ws_burst(bases[name], args.size, total)))
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.communicate(timeout=120)
        upstream.terminate()
        upstream.wait(30)
    records = sum(1 for _ in (work / "trace.jsonl").open("rb"))
    direct_us, proxy_us = median(rtt["direct"]) * 1e6, median(rtt["proxy"]) * 1e6
    size = f"{args.size} B"
    figures = [
        Figure(f"{size}: WebSocket round trip, direct", direct_us, "-", None, " us"),
        Figure(f"{size}: WebSocket round trip, through the proxy", proxy_us, "-", None, " us"),
        Figure(f"{size}: added per round trip (2 messages)", proxy_us - direct_us, "-", None, " us"),
        Figure(f"{size}: round trip, proxy / direct", proxy_us / direct_us, "-", None),
        Figure(f"{size}: SSE MB/s, proxy / direct", median(sse["proxy"]) / median(sse["direct"]), "-", None,
               note=f"direct {median(sse['direct']):.1f} MB/s, proxy {median(sse['proxy']):.1f} MB/s"),
        Figure(f"{size}: WebSocket echo MB/s, proxy / direct", median(burst["proxy"]) / median(burst["direct"]),
               "-", None, note=f"direct {median(burst['direct']):.1f} MB/s, proxy {median(burst['proxy']):.1f} MB/s"),
        Figure("records in the trace", records, "-", None),
        load_figure(load_before, __import__("os").getloadavg()[0]),
    ]  # fmt: skip
    report("remote recorder", figures, {"args": vars(args)}, args.json)


if __name__ == "__main__":
    main()
