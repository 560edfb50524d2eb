"""Tap benchmarks: round-trip latency, burst throughput and timestamp fidelity of
`acp-trace record`, each against a direct pipe measured in the same run.

    .venv/bin/python benchmarks/bench_tap.py all            # everything (a few minutes)
    .venv/bin/python benchmarks/bench_tap.py latency --sizes 200 4096
    .venv/bin/python benchmarks/bench_tap.py throughput --mb 100 --reps 5
    .venv/bin/python benchmarks/bench_tap.py timestamps

The echo agent (echo_agent.py) is reached these ways:

- direct: the client's pipes go straight to the agent;
- cat: `sh -c 'cat | AGENT | cat'`, two C processes that copy bytes and record nothing: the
  floor of any tap that is a process in the path (one more pipe hop each way);
- relay: relay.py, the same in Python (threads, os.read/os.write of 64 KiB, no recording);
- tap: `python -m acp_trace record -o TRACE -- AGENT`, with its defaults (redaction on);
- tap-noredact (throughput only): the same with --no-redact, to show what the secret scan of
  the writer costs.

latency: one client (pingpong_client.Peer) keeps them all alive and alternates pings between
them, so noise hits all alike; per size, the median and p99 round trip of each and what the
tap adds to the direct pipe. throughput: the agent writes --mb of N-byte lines after a ready
line; the client reads them all; rounds interleaved, median MB/s; also the share of lines the
tap recorded and how fast its writer encodes lines on one core (in this process).
timestamps: see `timestamps`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Figure, median, percentile, python, report, rounds
from echo_agent import burst_lines, message
from pingpong_client import Peer, ping_line

HERE = Path(__file__).resolve().parent
AGENT = [python(), str(HERE / "echo_agent.py")]
VARIANTS = ("direct", "cat", "relay", "tap")
BURST_VARIANTS = (*VARIANTS, "tap-noredact")


def wrap(variant: str, agent: list[str], trace: Path) -> list[str]:
    """The command line that reaches `agent` the given way."""
    if variant == "direct":
        return agent
    if variant == "cat":
        return ["sh", "-c", 'cat | "$@" | cat', "sh", *agent]
    if variant == "relay":
        return [python(), str(HERE / "relay.py"), "--", *agent]
    options = ["--no-redact"] if variant == "tap-noredact" else []
    return [python(), "-m", "acp_trace", "record", *options, "-o", str(trace), "--", *agent]


# ---------------------------------------------------------------- latency


def latency(
    sizes: list[int], count: int, budget_mb: float, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    for size in sizes:
        n = max(30, min(count, int(budget_mb * 1e6 / size)))
        rtts = _ping_all(size, n, work)
        stats = {
            v: {"median_us": median(r) / 1e3, "p99_us": percentile(r, 99) / 1e3}
            for v, r in rtts.items()
        }
        raw[str(size)] = {"pings": n, **stats}
        d, t = stats["direct"], stats["tap"]
        added, added99 = t["median_us"] - d["median_us"], t["p99_us"] - d["p99_us"]
        floor = stats["cat"]["median_us"] - d["median_us"]
        label = _size_label(size)
        medians = ", ".join(f"{v} {x['median_us']:.0f}" for v, x in stats.items())
        note = f"medians (us): {medians}; floor (cat) adds {floor:.0f} us; {n} pings each"
        target = "<= 50 us" if size <= 200 else "-"
        met = added <= 50 if size <= 200 else None
        figures.append(Figure(f"{label}: added median RTT", added, target, met, " us", note))
        p99s = ", ".join(f"{v} {x['p99_us']:.0f}" for v, x in stats.items())
        figures.append(
            Figure(f"{label}: added p99 RTT", added99, "-", None, " us", f"p99 (us): {p99s}")
        )
    return figures, raw


def _ping_all(size: int, count: int, work: Path) -> dict[str, list[int]]:
    peers = {v: Peer(wrap(v, AGENT, work / f"latency-{size}.jsonl")) for v in VARIANTS}
    rtts: dict[str, list[int]] = {v: [] for v in VARIANTS}
    try:
        for i in range(20):  # warm up: imports, first reads, page cache
            for peer in peers.values():
                peer.ping(ping_line(i, size))
        gc.disable()
        for i, variant in rounds(VARIANTS, count):
            rtts[variant].append(peers[variant].ping(ping_line(i, size)))
    finally:
        gc.enable()
        for peer in peers.values():
            peer.close()
    return rtts


def _size_label(size: int) -> str:
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


# ---------------------------------------------------------------- throughput


def throughput(
    total_mb: float, line_sizes: list[int], reps: int, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    for size in line_sizes:
        lines = burst_lines(int(total_mb * 1e6), size)
        total = lines * size
        rates: dict[str, list[float]] = {v: [] for v in BURST_VARIANTS}
        recorded: list[float] = []
        for _rep, variant in rounds(BURST_VARIANTS, reps):
            trace = work / f"burst-{size}.jsonl"
            agent = [*AGENT, "--burst", str(total), "--line-size", str(size)]
            seconds = _burst_once(wrap(variant, agent, trace), total)
            rates[variant].append(total / seconds / 1e6)
            if variant.startswith("tap"):
                recorded.append(_recorded_fraction(trace, lines))
                trace.unlink()
        med = {v: median(r) for v, r in rates.items()}
        encode = _encode_rates(size)
        raw[str(size)] = {"mb_per_s": rates, "recorded_fraction": recorded, "encode": encode}
        ratio = med["tap"] / med["direct"]
        speeds = ", ".join(f"{v} {x:.0f}" for v, x in med.items())
        note = f"MB/s: {speeds}; the tap recorded at least {min(recorded):.0%} of the lines"
        label = f"{_size_label(size)} lines"
        figures.append(
            Figure(f"{label}: tap / direct throughput", ratio, ">= 0.5", ratio >= 0.5, "x", note)
        )
        if encode:
            note = f"without redaction {encode['noredact']:.0f} MB/s"
            figures.append(
                Figure(
                    f"{label}: tap writer encoding, one core",
                    encode["redact"],
                    "-",
                    None,
                    " MB/s",
                    note,
                )
            )
    return figures, raw


def _encode_rates(size: int) -> dict[str, float]:
    """MB/s at which the tap's writer turns lines of `size` bytes into trace records on one
    core, with and without redaction (empty when the encoder is not where it was)."""
    try:
        from acp_trace.record.writer import Item, encode_item
    except ImportError:
        return {}
    line = message(0, size)[:-1]
    count = max(5, (8 << 20) // size)
    out = {}
    for name, redact in (("redact", True), ("noredact", False)):
        start = time.perf_counter()
        for n in range(count):
            encode_item(Item(n, n, "agent", line), redact=redact, max_bytes=None)
        out[name] = count * size / (time.perf_counter() - start) / 1e6
    return out


def _burst_once(command: list[str], total: int) -> float:
    """Start the agent, wait for its ready line, say go, time until every byte is in."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    ready = b""
    while not ready.endswith(b"\n"):
        ready += os.read(fd, 1)
    start = time.perf_counter()
    proc.stdin.write(b"go\n")
    got = 0
    while got < total:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RuntimeError(f"{command}: stdout closed after {got} of {total} bytes")
        got += len(chunk)
    seconds = time.perf_counter() - start
    proc.stdin.close()
    proc.stdout.close()
    proc.wait(timeout=120)
    return seconds


def _recorded_fraction(trace: Path, expected: int) -> float:
    """The share of the agent's burst lines present in the trace (the rest was dropped)."""
    lines = 0
    with trace.open("rb") as handle:
        for line in handle:
            lines += line.startswith(b'{"seq":') and b'"src":"agent"' in line[:64]
    return (lines - 1) / expected  # minus the ready line


# ---------------------------------------------------------------- timestamps


def timestamps(
    count: int, interval_us: int, size: int, reps: int, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    """Skew between the moment the agent wrote a line and the time stamped for it.

    The agent logs time.monotonic_ns() just before each write, and one (wall-clock,
    monotonic) pair. CLOCK_MONOTONIC is one clock for every process of the machine; the
    tap's t_ns count from its own monotonic start, whose wall-clock time is the header's
    `started_at`. So the tap's start on the monotonic clock is started_at minus the agent's
    (wall - monotonic) offset, and the skew of line i is (start + t_ns[i]) - write[i]. The
    tap reads its clock just before it formats started_at, so this overstates the skew by
    that gap (microseconds) and by under 1 us of rounding. As a cross-check the figures also
    align the first line instead (skew relative to the first line's). For the direct pipe the
    client stamps each line as it reads it, on the same clock: the floor for any reader.
    """
    skews: dict[str, list[float]] = {"direct": [], "tap": [], "tap_first_aligned": []}
    for _rep, variant in rounds(("direct", "tap"), reps):
        log, trace = work / "timed-log.json", work / "timed.jsonl"
        agent = [
            *AGENT,
            "--timed",
            str(count),
            "--interval-us",
            str(interval_us),
            "--line-size",
            str(size),
            "--log",
            str(log),
        ]
        received = _timed_once(wrap(variant, agent, trace), count)
        stamps = json.loads(log.read_text())
        writes = stamps["writes"]
        if variant == "direct":
            skews["direct"] += [(r - w) / 1e3 for r, w in zip(received, writes, strict=True)]
            continue
        t_ns, started_ns = _tap_stamps(trace, count)
        t0 = started_ns - (stamps["wall_ns"] - stamps["mono_ns"])
        skews["tap"] += [(t0 + t - w) / 1e3 for t, w in zip(t_ns, writes, strict=True)]
        skews["tap_first_aligned"] += [
            ((t - t_ns[0]) - (w - writes[0])) / 1e3 for t, w in zip(t_ns, writes, strict=True)
        ]
        trace.unlink()
    stats = {
        k: {"median_us": median(v), "p99_us": percentile(v, 99), "max_us": max(v)}
        for k, v in skews.items()
    }
    tap, direct, aligned = stats["tap"], stats["direct"], stats["tap_first_aligned"]
    note = (
        f"median {tap['median_us']:.0f} us; first-line aligned: median {aligned['median_us']:.0f} us, "
        f"p99 {aligned['p99_us']:.0f} us; direct reader: median {direct['median_us']:.0f} us, p99 {direct['p99_us']:.0f} us"
    )
    figures = [
        Figure(
            "timestamp skew p99 (tap t_ns - agent write)",
            tap["p99_us"],
            "< 100 us",
            tap["p99_us"] < 100,
            " us",
            note,
        ),
        Figure("timestamp skew median", tap["median_us"], "-", None, " us"),
    ]
    return figures, {"lines": len(skews["tap"]), **stats}


def _timed_once(command: list[str], count: int) -> list[int]:
    """Run a timed agent; the monotonic time at which each of its lines was read."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    ready = b""
    while not ready.endswith(b"\n"):
        ready += os.read(fd, 1)
    proc.stdin.write(b"go\n")
    received: list[int] = []
    while len(received) < count:
        chunk = os.read(fd, 1 << 16)
        now = time.monotonic_ns()
        if not chunk:
            raise RuntimeError("the timed agent stopped early")
        received += [now] * chunk.count(b"\n")
    proc.stdin.close()
    proc.wait(timeout=60)
    return received


def _tap_stamps(trace: Path, count: int) -> tuple[list[int], int]:
    """The t_ns of the agent's timed lines (by their index) and started_at in epoch ns."""
    lines = trace.read_bytes().splitlines()
    header = json.loads(lines[0])
    when = datetime.strptime(header["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    started_ns = (when - datetime(1970, 1, 1, tzinfo=UTC)) // _US * 1000
    t_ns = [0] * count
    for line in lines[1:]:
        rec = json.loads(line)
        msg = rec.get("msg")
        if (
            rec.get("src") == "agent"
            and isinstance(msg, dict)
            and msg.get("method") == "session/update"
        ):
            t_ns[msg["params"]["update"]["n"]] = rec["t_ns"]
    return t_ns, started_ns


_US = __import__("datetime").timedelta(microseconds=1)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("latency", "throughput", "timestamps", "all"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 4096, 100 * 1024, 1 << 20])
    parser.add_argument(
        "--count", type=int, default=2000, help="pings per variant and size (at most)"
    )
    parser.add_argument(
        "--ping-mb", type=float, default=200.0, help="at most this many MB of pings per size"
    )
    parser.add_argument("--mb", type=float, default=100.0, help="burst size in MB (default 100)")
    parser.add_argument("--line-sizes", type=int, nargs="+", default=[4096, 1 << 20])
    parser.add_argument("--reps", type=int, default=5, help="rounds for throughput and timestamps")
    parser.add_argument("--timed", type=int, default=2000, help="timed lines per round")
    parser.add_argument("--interval-us", type=int, default=1000)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="acp-trace-bench-tap-"))
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    try:
        if args.what in ("latency", "all"):
            f, raw["latency"] = latency(args.sizes, args.count, args.ping_mb, work)
            figures += f
        if args.what in ("throughput", "all"):
            f, raw["throughput"] = throughput(args.mb, args.line_sizes, args.reps, work)
            figures += f
        if args.what in ("timestamps", "all"):
            f, raw["timestamps"] = timestamps(args.timed, args.interval_us, 200, args.reps, work)
            figures += f
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report("tap", figures, {"raw": raw}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
