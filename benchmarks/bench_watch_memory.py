"""`acp-trace watch` over a long run of sustained traffic (issue 31: "keeps up with that rate
without growing memory"): the flood agent (flood_agent.py) replays history at RATE updates a
second through `acp-trace record` for MINUTES, resume after resume, while two watchers
follow the same folder: the screen (watch_screen_probe.py, headless Textual) and
`watch --format jsonl`. Every SAMPLE seconds each watcher's RSS and CPU time are read from
/proc; the figures: RSS a few minutes in, at the end and its slope over the second half,
each watcher's CPU share, and whether it kept up (the stamp-to-seen latency in the last
tenth of the run against the first tenth).

Long by design, so it takes no lock (bench_watch.py is the locked, interleaved one): run it
at normal priority, not niced (a niced watcher starved by a busy machine falls behind and
the figure would be about the machine), and read the load average it prints.

    python benchmarks/bench_watch_memory.py [--minutes 20] [--rate 10000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import benchlib
from bench_watch import ACP, HERE, proc_stats, start_record
from benchlib import Figure, median


def drive_for(proc: subprocess.Popen[bytes], seconds: float) -> int:
    """initialize, session/new, then resumes one after another until `seconds` have passed;
    the number of resumes answered."""
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def call(rid: int, method: str, params: dict[str, Any]) -> None:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        stdin.write(json.dumps(msg).encode() + b"\n")
        stdin.flush()
        for line in stdout:
            if b'"id"' in line and json.loads(line).get("id") == rid:
                return

    call(0, "initialize", {"protocolVersion": 2})
    call(1, "session/new", {"cwd": "/tmp", "mcpServers": []})
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        params = {"sessionId": "flood", "cwd": "/tmp", "replayFrom": {"type": "start"}}
        call(2 + n, "session/resume", params)
        n += 1
    stdin.close()
    proc.wait()
    return n


def sampler(
    pid: int, every: float, out: list[tuple[float, float, float]], stop: threading.Event
) -> None:
    while not stop.is_set():
        try:
            cpu, rss = proc_stats(pid)
        except (OSError, IndexError):
            return
        out.append((time.monotonic(), cpu, rss))
        stop.wait(every)


def rss_at(samples: list[tuple[float, float, float]], t0: float, second: float) -> float:
    """The RSS of the first sample `second` seconds or more into the run."""
    for t, _cpu, rss in samples:
        if t - t0 >= second:
            return rss
    return float("nan")


def slope(samples: list[tuple[float, float, float]]) -> float:
    """Least-squares slope of RSS (MB a minute) over the second half of the samples."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return float("nan")
    xs = [(t - half[0][0]) / 60 for t, _c, _r in half]
    ys = [r for _t, _c, r in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def ends(values: list[tuple[float, float]], t0: float, t1: float) -> tuple[float, float]:
    """Median latency in the first and the last tenth of the run ((when, ms) pairs)."""
    tenth = (t1 - t0) / 10
    first = [v for t, v in values if t < t0 + tenth]
    last = [v for t, v in values if t >= t1 - tenth]
    return median(first), median(last)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=10_000.0, help="updates a second")
    parser.add_argument("--per-replay", type=int, default=5_000)
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--catch-up", type=float, default=120.0, help="seconds, at most")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-watch-mem-"))
    folder = work / "traces"
    folder.mkdir()
    (folder / "ready.log").write_text("not a trace\n")  # jsonl says `skipped`: it is up
    ready = work / "screen-ready"
    screen = subprocess.Popen(
        [sys.executable, str(HERE / "watch_screen_probe.py"), str(folder), str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    jsonl = subprocess.Popen(
        [*ACP, "watch", "--format", "jsonl", "--until-ended", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert jsonl.stdout is not None and screen.stdout is not None
    jsonl.stdout.readline()
    while not ready.exists():
        time.sleep(0.01)
    stop = threading.Event()
    samples: dict[str, list[tuple[float, float, float]]] = {"screen": [], "jsonl": []}
    for name, proc in (("screen", screen), ("jsonl", jsonl)):
        threading.Thread(
            target=sampler, args=(proc.pid, args.sample, samples[name], stop), daemon=True
        ).start()
    t0 = time.monotonic()
    rec = start_record(folder, ["--rate", str(args.rate), "--per-replay", str(args.per_replay)])
    lat: list[tuple[float, float]] = []  # (monotonic, ms): jsonl's replay_started and marker
    base: float | None = None

    def read_jsonl() -> None:
        nonlocal base
        assert jsonl.stdout is not None
        for line in jsonl.stdout:
            now, mono = time.time(), time.monotonic()
            event = json.loads(line)
            if event["event"] == "trace_started":
                base = datetime.fromisoformat(
                    event["started_at"].replace("Z", "+00:00")
                ).timestamp()
            elif base is not None and event["event"] in ("replay_started", "marker"):
                lat.append((mono, (now - base) * 1000 - event["t_ms"]))

    reader = threading.Thread(target=read_jsonl, daemon=True)
    reader.start()
    probe_out: list[bytes] = []
    probe_reader = threading.Thread(
        target=lambda: probe_out.append(screen.stdout.read()),  # type: ignore[union-attr]
        daemon=True,
    )
    probe_reader.start()
    resumes = drive_for(rec, args.minutes * 60)
    t1 = time.monotonic()
    behind: list[str] = []
    for name, proc in (("jsonl", jsonl), ("screen", screen)):
        try:  # a watcher behind catches up first, for at most --catch-up seconds in all
            proc.wait(timeout=max(1.0, t1 + args.catch_up - time.monotonic()))
        except subprocess.TimeoutExpired:
            behind.append(name)
            proc.terminate()  # the screen probe prints its figures on SIGTERM
            proc.wait()
    stop.set()
    reader.join(timeout=10)
    probe_reader.join(timeout=60)
    caught_up = time.monotonic() - t1
    probe = json.loads(probe_out[0] or b"{}") if probe_out else {}
    figures: list[Figure] = []
    for name, series in samples.items():
        series = [s for s in series if s[0] >= t0]
        early = rss_at(series, t0, 120)
        at_end = [s for s in series if s[0] <= t1]
        last = at_end[-1][2] if at_end else float("nan")
        figures.append(
            Figure(f"{name}: RSS at 2 min", early, "-", None, "MB"),
        )
        figures.append(Figure(f"{name}: RSS at the end of the traffic", last, "-", None, "MB"))
        growth = slope(at_end)
        figures.append(
            Figure(
                f"{name}: RSS slope, second half",
                growth,
                "~0 (flat)",
                abs(growth) < 1.0,
                "MB/min",
                f"peak {max((s[2] for s in series), default=float('nan')):.0f} MB",
            )
        )
        if len(at_end) >= 2:
            share = (at_end[-1][1] - at_end[0][1]) / max(at_end[-1][0] - at_end[0][0], 1e-9)
            figures.append(Figure(f"{name}: CPU share of one core", share, "<1", share < 1, ""))
    first, last = ends(lat, t0, t1)
    figures.append(Figure("jsonl: stamp -> event, median, first tenth", first, "-", None, "ms"))
    figures.append(
        Figure("jsonl: stamp -> event, median, last tenth", last, "<250ms", last < 250, "ms")
    )
    screen_lat = probe.get("latency", [])
    tenth = max(len(screen_lat) // 10, 1)
    s_first, s_last = median(screen_lat[:tenth]), median(screen_lat[-tenth:])
    figures.append(
        Figure("screen: stamp -> painted, median, first tenth", s_first, "-", None, "ms")
    )
    figures.append(
        Figure("screen: stamp -> painted, median, last tenth", s_last, "<250ms", s_last < 250, "ms")
    )
    figures.append(
        Figure(
            "watchers done after the traffic ended",
            caught_up,
            "-",
            None,
            "s",
            f"stopped, still behind: {', '.join(behind)}" if behind else "both caught up",
        )
    )
    extra = {
        "minutes": args.minutes,
        "rate": args.rate,
        "resumes": resumes,
        "updates": resumes * args.per_replay,
        "load_at_end": os.getloadavg(),
        "behind": behind,
        "rss_series": {
            k: [(round(t - t0, 1), round(r, 1)) for t, _c, r in v] for k, v in samples.items()
        },
    }
    benchlib.report("watch, long run", figures, extra, args.json)
    print(f"{resumes} resumes, {resumes * args.per_replay} updates; load {os.getloadavg()}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
