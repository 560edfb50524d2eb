"""Tap benchmarks (issue 20): what `acp-trace record` adds to a session, as ratios to the cat
pipeline measured side by side in one run.

    .venv/bin/python benchmarks/bench_tap.py all                 # everything (a few minutes)
    .venv/bin/python benchmarks/bench_tap.py latency --sizes 200 4096
    .venv/bin/python benchmarks/bench_tap.py throughput --mb 100 --reps 5
    .venv/bin/python benchmarks/bench_tap.py startup --reps 20
    .venv/bin/python benchmarks/bench_tap.py timestamps
    .venv/bin/python benchmarks/bench_tap.py stall
    .venv/bin/python benchmarks/bench_tap.py all --baseline /tmp/acp-base/src   # before/after

The echo agent (echo_agent.py) is reached these ways:

- direct: the client's pipes go straight to the agent;
- cat: `sh -c 'cat | AGENT | cat'`, two C relays that record nothing: the floor of any tap
  that is a process in the path (the same hops as a tap);
- relay: relay.py, the same in Python (threads, os.read/os.write, no recording): the floor of
  a tap written in Python, to which issue 34's targets are ratios;
- tap: `acp-trace record -o TRACE -- AGENT`, its defaults (redaction on, the fast path);
- tap-typer (start-up only): the same through the typer command line (`--debug` before
  `record` turns the fast path off), to show what typer and rich cost;
- tap-noredact (throughput only): with --no-redact;
- tap-base (with --baseline SRC): the tap of another source tree, e.g. a worktree of main.

latency: one client (pingpong_client.Peer) keeps every variant alive and alternates pings
between them; per size, median round trips and what each adds to the direct pipe.
throughput: the agent writes --mb of N-byte lines; timed from the first byte the client
reads to the last; rounds interleaved, medians; afterwards each tap's trace is read to check
that every line was recorded or counted in a `dropped` event.
startup: spawn to first answer: the client writes a request at once and times the echo.
timestamps: the skew between the agent's write and the tap's stamp (see `timestamps`).
stall: the client sends one 128 MiB line while the agent sends a tick every millisecond; the
delay of the ticks while the line passes shows whether recording it holds up the other way.
The load average is printed with the figures: the machine may be shared.
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
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Figure, load_figure, median, percentile, python, report, rounds
from echo_agent import burst_lines
from pingpong_client import Peer, ping_line

HERE = Path(__file__).resolve().parent
AGENT = [python(), str(HERE / "echo_agent.py")]
BASELINE: dict[str, str] = {}  # {"src": path} once --baseline is given


def wrap(variant: str, agent: list[str], trace: Path) -> list[str]:
    """The command line that reaches `agent` the given way."""
    if variant == "direct":
        return agent
    if variant == "cat":
        return ["sh", "-c", 'cat | "$@" | cat', "sh", *agent]
    if variant == "relay":
        return [python(), str(HERE / "relay.py"), "--", *agent]
    if variant == "tap-base":
        code = f"import sys; sys.path.insert(0, {BASELINE['src']!r}); from acp_trace.cli import main; main()"
        return [python(), "-c", code, "record", "-o", str(trace), "--", *agent]
    before = ["--debug"] if variant == "tap-typer" else []
    options = ["--no-redact"] if variant == "tap-noredact" else []
    return [*_acp_trace(), *before, "record", *options, "-o", str(trace), "--", *agent]


def _acp_trace() -> list[str]:
    """The `acp-trace` an editor runs: the venv's console script, else `python -m`."""
    script = Path(python()).with_name("acp-trace")
    return [str(script)] if script.exists() else [python(), "-m", "acp_trace"]


def compile_trees() -> None:
    """Write the bytecode of the trees under test, as `pip install` does for an installed
    package: an editable install under PYTHONDONTWRITEBYTECODE (set on many CI machines and
    containers) would otherwise compile the tap's modules anew on every start, and start-up
    would measure the compiler (about 10 ms of tap.py alone), not the tap."""
    import compileall

    import acp_trace

    trees = [Path(acp_trace.__file__).parent]
    if BASELINE:
        trees.append(Path(BASELINE["src"]) / "acp_trace")
    for tree in trees:
        compileall.compile_dir(str(tree), quiet=1)


def variants(*names: str) -> tuple[str, ...]:
    return (*names, "tap-base") if BASELINE else names


def _size_label(size: int) -> str:
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


def _ratio(value: float, floor: float) -> float:
    return value / floor if floor > 0 else float("inf")


# ---------------------------------------------------------------- latency


def latency(
    sizes: list[int], count: int, budget_mb: float, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    names = variants("direct", "cat", "relay", "tap")
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    for size in sizes:
        n = max(30, min(count, int(budget_mb * 1e6 / size)))
        rtts = _ping_all(names, size, n, work)
        med = {v: median(r) / 1e3 for v, r in rtts.items()}
        p99 = {v: percentile(r, 99) / 1e3 for v, r in rtts.items()}
        added = {v: med[v] - med["direct"] for v in names}
        raw[str(size)] = {"pings": n, "median_us": med, "p99_us": p99}
        ratio = _ratio(added["tap"], added["relay"])
        target = size <= 4096
        note = "added median (us): " + ", ".join(f"{v} {x:.1f}" for v, x in added.items())
        note += f"; direct {med['direct']:.1f} us; {n} pings each"
        note += f"; tap / cat {_ratio(added['tap'], added['cat']):.2f}x"
        label = _size_label(size)
        figures.append(
            Figure(
                f"{label}: added RTT, tap / relay.py",
                ratio,
                "<= 1.2" if target else "-",
                ratio <= 1.2 if target else None,
                "x",
                note,
            )
        )
        p99s = ", ".join(f"{v} {x:.0f}" for v, x in p99.items())
        figures.append(
            Figure(
                f"{label}: added p99 RTT",
                p99["tap"] - p99["direct"],
                "-",
                None,
                " us",
                f"p99 (us): {p99s}",
            )
        )
    return figures, raw


def _ping_all(names: tuple[str, ...], size: int, count: int, work: Path) -> dict[str, list[int]]:
    peers = {v: Peer(wrap(v, AGENT, work / f"latency-{v}-{size}.jsonl")) for v in names}
    rtts: dict[str, list[int]] = {v: [] for v in names}
    try:
        for i in range(20):  # warm up: imports, first reads, page cache
            for peer in peers.values():
                peer.ping(ping_line(i, size))
        gc.disable()
        for i, variant in rounds(names, count):
            rtts[variant].append(peers[variant].ping(ping_line(i, size)))
    finally:
        gc.enable()
        for peer in peers.values():
            peer.close()
    return rtts


# ---------------------------------------------------------------- throughput


def throughput(
    total_mb: float, line_sizes: list[int], reps: int, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    names = variants("direct", "cat", "relay", "tap", "tap-noredact")
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    for size in line_sizes:
        lines = burst_lines(int(total_mb * 1e6), size)
        total = lines * size
        rates: dict[str, list[float]] = {v: [] for v in names}
        kept: dict[str, list[tuple[int, int]]] = {v: [] for v in names if v.startswith("tap")}
        for rep, variant in rounds(names, reps):
            trace = work / f"burst-{variant}-{size}-{rep}.jsonl"
            agent = [*AGENT, "--burst", str(total), "--line-size", str(size)]
            rates[variant].append(total / _burst_once(wrap(variant, agent, trace), total) / 1e6)
            if variant in kept:
                kept[variant].append(_recorded(trace))
                trace.unlink()
        med = {v: median(r) for v, r in rates.items()}
        raw[str(size)] = {"mb_per_s": rates, "recorded_and_dropped": kept, "lines": lines}
        ratio = _ratio(med["tap"], med["relay"])
        accounted = all(r + d == lines for r, d in kept["tap"])
        dropped = max(d for _r, d in kept["tap"])
        speeds = ", ".join(f"{v} {x:.0f}" for v, x in med.items())
        note = f"MB/s: {speeds}; every line recorded or counted: {accounted}; at most {dropped} of {lines} dropped"
        note += f"; tap / cat {_ratio(med['tap'], med['cat']):.2f}x"
        label = f"{_size_label(size)} lines: burst, tap / relay.py"
        figures.append(Figure(label, ratio, ">= 0.8", ratio >= 0.8 and accounted, "x", note))
    return figures, raw


def _burst_once(command: list[str], total: int) -> float:
    """Start the agent, wait for its ready line, say go; seconds from the first byte of the
    burst to the last."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    ready = b""
    while not ready.endswith(b"\n"):
        ready += os.read(fd, 1)
    proc.stdin.write(b"go\n")
    got, start = 0, 0.0
    while got < total:
        chunk = os.read(fd, 1 << 20)
        if not got:
            start = time.perf_counter()
        if not chunk:
            raise RuntimeError(f"{command}: stdout closed after {got} of {total} bytes")
        got += len(chunk)
    seconds = time.perf_counter() - start
    proc.stdin.close()
    proc.stdout.close()
    proc.wait(timeout=300)
    return seconds


def _recorded(trace: Path) -> tuple[int, int]:
    """(burst lines recorded, lines counted in `dropped` events) of the agent's stream."""
    recorded = dropped = 0
    with trace.open("rb") as handle:
        for line in handle:
            head = line[:64]
            if b'"src":"agent"' in head:
                recorded += 1
            elif b'"event":"dropped"' in line and b'"stream":"agent"' in line:
                dropped += json.loads(line)["count"]
    return recorded - 1, dropped  # the ready line is not part of the burst


# ---------------------------------------------------------------- start-up


def startup(reps: int, work: Path) -> tuple[list[Figure], dict[str, Any]]:
    """Spawn to first answer: the request is written at once, the echo timed."""
    names = variants("direct", "cat", "relay", "tap", "tap-typer")
    times: dict[str, list[float]] = {v: [] for v in names}
    request = ping_line(0, 200)
    for rep, variant in rounds(names, reps):
        command = wrap(variant, AGENT, work / f"startup-{variant}-{rep}.jsonl")
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(request)
        answer = b""
        while not answer.endswith(b"\n"):
            answer += os.read(proc.stdout.fileno(), 65536)
        times[variant].append((time.perf_counter() - start) * 1e3)
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
    med = {v: median(t) for v, t in times.items()}
    added = {v: med[v] - med["direct"] for v in names}
    note = f"agent alone {med['direct']:.1f} ms; added (ms): " + ", ".join(
        f"{v} {added[v]:.1f}" for v in names[1:]
    )
    over = added["tap"] - added["relay"]
    figures = [
        Figure(
            "start-up: added to the first answer, tap - relay.py",
            over,
            "<= 30 ms",
            over <= 30,
            " ms",
            note,
        ),
        Figure("start-up: through typer instead", added["tap-typer"], "-", None, " ms"),
    ]
    return figures, {"ms": times}


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
    tap reads both clocks back to back at its start, so this overstates the skew by that gap
    (about a microsecond) and by under 1 us of rounding. As a cross-check the figures also
    align the first line instead. For the direct pipe the client stamps each line as it reads
    it, on the same clock: the floor for any reader.
    """
    names = ("direct", "tap", "tap-base") if BASELINE else ("direct", "tap")
    skews: dict[str, list[float]] = {v: [] for v in names}
    aligned: list[float] = []
    for _rep, variant in rounds(names, reps):
        log, trace = work / "timed-log.json", work / "timed.jsonl"
        agent = [*AGENT, "--timed", str(count), "--interval-us", str(interval_us)]
        agent += ["--line-size", str(size), "--log", str(log)]
        received = _timed_once(wrap(variant, agent, trace), count)
        stamps = json.loads(log.read_text())
        writes = stamps["writes"]
        if variant == "direct":
            skews["direct"] += [(r - w) / 1e3 for r, w in zip(received, writes, strict=True)]
            continue
        t_ns, started_ns = _tap_stamps(trace, count)
        t0 = started_ns - (stamps["wall_ns"] - stamps["mono_ns"])
        skews[variant] += [(t0 + t - w) / 1e3 for t, w in zip(t_ns, writes, strict=True)]
        if variant == "tap":
            aligned += [
                ((t - t_ns[0]) - (w - writes[0])) / 1e3 for t, w in zip(t_ns, writes, strict=True)
            ]
        trace.unlink()
    p99 = {v: percentile(s, 99) for v, s in skews.items()}
    note = ", ".join(
        f"{v}: median {median(s):.0f} us, p99 {p99[v]:.0f} us" for v, s in skews.items()
    )
    note += f"; tap first-line aligned p99 {percentile(aligned, 99):.0f} us"
    base = p99.get("tap-base")
    target = "<= tap-base" if base is not None else "<= 224 us (docs)"
    met = p99["tap"] <= (base if base is not None else 224) * 1.1
    figures = [
        Figure("timestamp skew p99 (tap t_ns - agent write)", p99["tap"], target, met, " us", note),
        Figure("timestamp skew median", median(skews["tap"]), "-", None, " us"),
    ]
    stats = {
        v: {"median_us": median(s), "p99_us": p99[v], "max_us": max(s)} for v, s in skews.items()
    }
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
    proc.stdout.close()
    return received


def _tap_stamps(trace: Path, count: int) -> tuple[list[int], int]:
    """The t_ns of the agent's timed lines (by their index) and started_at in epoch ns."""
    lines = trace.read_bytes().splitlines()
    header = json.loads(lines[0])
    when = datetime.strptime(header["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    started_ns = round((when - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1e6) * 1000
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


# ---------------------------------------------------------------- stall


def stall(line_mb: int, reps: int, work: Path) -> tuple[list[Figure], dict[str, Any]]:
    """How long ticks the agent writes every millisecond wait while the client sends one long
    line the other way (which the tap must record)."""
    names = variants("direct", "cat", "tap")
    delays: dict[str, list[float]] = {v: [] for v in names}
    line = b'{"jsonrpc":"2.0","method":"big","params":{"d":"' + b"b" * (line_mb << 20) + b'"}}\n'
    for rep, variant in rounds(names, reps):
        agent = [*AGENT, "--ticks", "--interval-us", "1000"]
        delays[variant].append(
            _stall_once(wrap(variant, agent, work / f"stall-{variant}-{rep}.jsonl"), line)
        )
    med = {v: median(d) for v, d in delays.items()}
    note = "worst tick delay while the line passed, median of rounds (ms): "
    note += ", ".join(f"{v} {x:.1f}" for v, x in med.items())
    added = med["tap"] - med["direct"]
    figure = Figure(
        f"{line_mb} MiB line: added worst delay the other way",
        added,
        "a few ms",
        added <= 5,
        " ms",
        note,
    )
    return [figure], {"worst_ms": delays}


def _stall_once(command: list[str], line: bytes) -> float:
    """Milliseconds of the worst delay of a tick (read time minus write time) while `line`
    is being sent to the agent, beyond its median."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, fd = proc.stdin, proc.stdout.fileno()
    ready = b""
    while not ready.endswith(b"\n"):
        ready += os.read(fd, 1)
    done = threading.Event()

    def send() -> None:
        time.sleep(0.05)
        stdin.write(line)
        stdin.flush()
        done.set()

    sender = threading.Thread(target=send)
    sender.start()
    delays: list[float] = []
    pending = b""
    while not done.is_set() or len(delays) < 50:
        pending += os.read(fd, 65536)
        now = time.monotonic_ns()
        *ticks, pending = pending.split(b"\n")
        delays += [(now - int(json.loads(t)["t"])) / 1e6 for t in ticks if t]
    sender.join()
    stdin.close()
    proc.wait(timeout=300)
    proc.stdout.close()
    return max(delays) - median(delays)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "what", choices=("latency", "throughput", "startup", "timestamps", "stall", "all")
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 4096, 100 * 1024, 1 << 20])
    parser.add_argument(
        "--count", type=int, default=2000, help="pings per variant and size (at most)"
    )
    parser.add_argument(
        "--ping-mb", type=float, default=200.0, help="at most this many MB of pings per size"
    )
    parser.add_argument("--mb", type=float, default=100.0, help="burst size in MB (default 100)")
    parser.add_argument("--line-sizes", type=int, nargs="+", default=[4096, 1 << 20])
    parser.add_argument(
        "--reps", type=int, default=5, help="rounds for throughput, timestamps, stall"
    )
    parser.add_argument("--startup-reps", type=int, default=20, help="rounds for start-up")
    parser.add_argument("--timed", type=int, default=2000, help="timed lines per round")
    parser.add_argument("--interval-us", type=int, default=1000)
    parser.add_argument("--stall-mb", type=int, default=128, help="the long line of `stall`, MiB")
    parser.add_argument("--baseline", help="another tree's src/ to run as tap-base beside this one")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.baseline:
        BASELINE["src"] = str(Path(args.baseline).resolve())
    compile_trees()
    work = Path(tempfile.mkdtemp(prefix="acp-trace-bench-tap-"))
    figures: list[Figure] = []
    raw: dict[str, Any] = {"load_before": os.getloadavg()}
    steps = {
        "latency": lambda: latency(args.sizes, args.count, args.ping_mb, work),
        "throughput": lambda: throughput(args.mb, args.line_sizes, args.reps, work),
        "startup": lambda: startup(args.startup_reps, work),
        "timestamps": lambda: timestamps(args.timed, args.interval_us, 200, args.reps, work),
        "stall": lambda: stall(args.stall_mb, args.reps, work),
    }
    try:
        for name, step in steps.items():
            if args.what in (name, "all"):
                found, raw[name] = step()
                figures += found
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw["load_after"] = os.getloadavg()
    figures.append(load_figure(raw["load_before"][0], raw["load_after"][0]))
    report("tap", figures, {"raw": raw}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
