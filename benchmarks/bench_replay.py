"""A huge replay through the tap (issue 34): wall time of a resume whose agent replays a
history of real-shaped updates (replay_history.py, 600 MB by default), through the direct
pipe, `cat | AGENT | cat`, relay.py and `acp-trace record`, in interleaved rounds; medians
and ratios, and whether each tap trace holds every line (recorded, or counted as dropped).

    .venv/bin/python benchmarks/bench_replay.py                 # 600 MB, 3 rounds
    .venv/bin/python benchmarks/bench_replay.py --mb 100 --reps 5
    .venv/bin/python benchmarks/bench_replay.py --baseline /tmp/acp-base/src

The agent is echo_agent.py --replay: after the client's one line it writes the history file
in blocks of 1 MiB as fast as the pipe takes it, then the response. The client sends the
line and reads to the response. Timed: from the line sent to the response's last byte read
(what an editor waits for), and to the tap's exit (when the trace is complete). The history
file and the traces lie in one temporary folder: the trace is written to the same disk the
history is read from. The history is built once per run (--keep-history keeps it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tap
from bench_tap import AGENT, BASELINE, variants, wrap
from benchlib import Figure, load_figure, median, report, rounds
from echo_agent import READY, RESPONSE
from replay_history import write as write_history


def replay_once(command: list[str], total: int) -> tuple[float, float]:
    """(seconds from the resume sent to the response read, seconds to the process's exit)."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    ready = b""
    while not ready.endswith(b"\n"):
        ready += os.read(fd, 1)
    if ready != READY:
        raise RuntimeError(f"{command}: expected the ready line, got {ready[:200]!r}")
    start = time.perf_counter()
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{}}\n')
    got, tail = 0, b""
    while got < total:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RuntimeError(f"{command}: stdout closed after {got} of {total} bytes")
        got += len(chunk)
        tail = (tail + chunk)[-len(RESPONSE) :]
    answered = time.perf_counter() - start
    if tail != RESPONSE:
        raise RuntimeError(f"{command}: the replay did not end with the response")
    proc.stdin.close()
    proc.wait(timeout=600)
    proc.stdout.close()
    return answered, time.perf_counter() - start


def accounted(trace: Path, lines: int) -> tuple[int, int]:
    """(history lines recorded, lines counted in `dropped` events) in the agent's stream."""
    recorded, dropped = bench_tap._recorded(trace)  # less the ready line
    return recorded - 1, dropped  # and less the response


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=600.0, help="history size (default 600)")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--baseline", help="another tree's src/ to run as tap-base beside this one")
    parser.add_argument("--keep-history", help="build the history here once and keep it")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.baseline:
        BASELINE["src"] = str(Path(args.baseline).resolve())
    work = Path(tempfile.mkdtemp(prefix="acp-trace-bench-replay-"))
    raw: dict[str, Any] = {"load_before": os.getloadavg()}
    try:
        history = Path(args.keep_history) if args.keep_history else work / "history.jsonl"
        if not history.exists() or history.stat().st_size < args.mb * 1e6 * 0.99:
            lines, size = write_history(history, int(args.mb * 1e6))
        else:
            lines, size = sum(1 for _ in history.open("rb")), history.stat().st_size
        total = size + len(RESPONSE)
        names = variants("direct", "cat", "relay", "tap")
        answered: dict[str, list[float]] = {v: [] for v in names}
        exited: dict[str, list[float]] = {v: [] for v in names}
        kept: dict[str, list[tuple[int, int]]] = {v: [] for v in names if v.startswith("tap")}
        for rep, variant in rounds(names, args.reps):
            trace = work / f"replay-{variant}-{rep}.jsonl"
            agent = [*AGENT, "--replay", str(history)]
            first, last = replay_once(wrap(variant, agent, trace), total)
            answered[variant].append(first)
            exited[variant].append(last)
            if variant in kept:
                kept[variant].append(accounted(trace, lines))
                trace.unlink()
        raw.update(answered=answered, exited=exited, kept=kept, lines=lines, bytes=size)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw["load_after"] = os.getloadavg()
    med = {v: median(t) for v, t in answered.items()}
    done = {v: median(t) for v, t in exited.items()}
    ratio = med["tap"] / med["relay"]
    complete = all(r == lines and d == 0 for r, d in kept["tap"])
    counted = all(r + d == lines for r, d in kept["tap"])
    most = max(d for _r, d in kept["tap"])
    speeds = ", ".join(f"{v} {size / 1e6 / s:.0f}" for v, s in med.items())
    figures = [
        Figure(
            f"{size / 1e6:g} MB replay: answered, tap / relay.py",
            ratio,
            "<= 1.25",
            ratio <= 1.25,
            "x",
            f"MB/s: {speeds}; cat / relay.py {med['cat'] / med['relay']:.2f}x",
        ),
        Figure(
            "the same, tap / cat",
            med["tap"] / med["cat"],
            "-",
            None,
            "x",
        ),
        Figure(
            "until the tap exited (the trace complete), tap / relay.py",
            done["tap"] / done["relay"],
            "-",
            None,
            "x",
            f"seconds: tap {done['tap']:.2f}, relay.py {done['relay']:.2f}",
        ),
        Figure(
            "trace complete: every history line recorded, none dropped",
            float(complete),
            "yes",
            complete,
            "",
            f"{lines} lines; every line recorded or counted: {counted}; at most {most} dropped",
        ),
        load_figure(raw["load_before"][0], raw["load_after"][0]),
    ]
    report("replay", figures, {"raw": raw}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
