"""How fast `acp-trace watch` shows what the tap records (issue 31), and what it costs.

An agent (flood_agent.py) replays history at RATE updates a second through `acp-trace record`,
driven by a client here that sends REPLAYS resumes one after another. Three watchers follow the
same kind of run, one per run, interleaved over the repetitions:

- `tail`, the floor: a bare loop here that reads the new bytes of the trace every 5 ms (a
  `tail -f`). Its latency (the tap's stamp to the line being in the file) is the tap's share.
- `jsonl`: `acp-trace watch --format jsonl`, in its own process. Latency: the tap's stamp of a
  replay's request or marker to its event line read here. The `response` and `finding` events
  come once the analyzer has decided them: reported apart ("decided").
- `screen`: the Textual screen, headless (watch_screen_probe.py): every 50th record's stamp
  to the end of the first screen refresh after the redraw that shows it.

Each watcher's CPU seconds per 10,000 updates (its own CPU time from /proc: what "keeps up on
one core" needs, whatever the machine's load) and share of the wall clock, and its memory
(RSS a quarter in vs the peak). Then the tap at full speed (the agent unpaced, TAP_REPLAYS
resumes) with no watcher, with each of the three: the ratio says what a watcher costs the
tap on this machine. Then the engine alone on a finished trace (CPU per 10,000 updates, the
analyzer's rows kept), and the quiet case: the agent writes one stderr line every 0.5 s and
`tail` measures how long a record takes to reach the file when nothing else happens (the
tap's bound). Memory over a long run: bench_watch_memory.py.

    python benchmarks/bench_watch.py [--rate 10000] [--replays 20] [--reps 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import benchlib
from benchlib import Figure, median, percentile

HERE = Path(__file__).resolve().parent
ACP = [sys.executable, "-m", "acp_trace"]
TARGET_MS = 250.0


def start_record(folder: Path, agent_args: list[str]) -> subprocess.Popen[bytes]:
    agent = [sys.executable, str(HERE / "flood_agent.py"), *agent_args]
    return subprocess.Popen(
        [*ACP, "record", "--dir", str(folder), "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def drive(proc: subprocess.Popen[bytes], replays: int) -> float:
    """initialize, session/new, then `replays` resumes, each after the last one's answer;
    the seconds from the first resume sent to the last one answered."""
    assert proc.stdin is not None and proc.stdout is not None

    def call(rid: int, method: str, params: dict[str, Any]) -> None:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        proc.stdin.write(json.dumps(msg).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        for line in proc.stdout:  # type: ignore[union-attr]
            if b'"id"' in line and json.loads(line).get("id") == rid:
                return

    call(0, "initialize", {"protocolVersion": 2})
    call(1, "session/new", {"cwd": "/tmp", "mcpServers": []})
    start = time.perf_counter()
    for n in range(replays):
        call(
            2 + n,
            "session/resume",
            {"sessionId": "flood", "cwd": "/tmp", "replayFrom": {"type": "start"}},
        )
    seconds = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return seconds


def started_at(path: Path) -> float:
    with path.open("rb") as f:
        head = json.loads(f.readline())
    return datetime.fromisoformat(head["started_at"].replace("Z", "+00:00")).timestamp()


def wait_trace(folder: Path) -> Path:
    while True:
        found = [p for p in folder.glob("*.jsonl") if p.stat().st_size > 0]
        if found:
            return found[0]
        time.sleep(0.002)


def tail(folder: Path, done: threading.Event, sample: int = 50) -> list[float]:
    """The floor: stamp -> in the file, for every `sample`-th line."""
    path = wait_trace(folder)
    base, offset, carry, n, out = started_at(path), 0, b"", 0, []
    with path.open("rb") as f:
        while True:
            data = f.read()
            now = time.time()
            if data:
                lines = (carry + data).split(b"\n")
                carry = lines.pop()
                for line in lines:
                    n += 1
                    if n % sample == 0 and b'"t_ns":' in line:
                        t_ns = json.loads(line).get("t_ns")
                        if isinstance(t_ns, int):
                            out.append((now - base - t_ns / 1e9) * 1000)
            elif done.is_set():
                return out
            time.sleep(0.005)
            offset += len(data)


def proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds, RSS MB) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    return cpu, rss


def watch_child(
    argv: list[str], folder: Path
) -> tuple[subprocess.Popen[bytes], list[tuple[float, float, float]]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    samples: list[tuple[float, float, float]] = []

    def sample() -> None:
        while proc.poll() is None:
            try:
                cpu, rss = proc_stats(proc.pid)
            except (OSError, IndexError):
                return
            samples.append((time.monotonic(), cpu, rss))
            time.sleep(0.25)

    threading.Thread(target=sample, daemon=True).start()
    return proc, samples


def start_watcher(
    variant: str, folder: Path, work: Path
) -> tuple[subprocess.Popen[bytes], list[tuple[float, float, float]]] | None:
    """The watcher of a variant, up and following `folder` (None for `tail` and `none`)."""
    if variant == "jsonl":  # a stray file: its `skipped` event says the watcher is up
        (folder / "ready.log").write_text("not a trace\n")
        watcher, samples = watch_child(
            [*ACP, "watch", "--format", "jsonl", "--until-ended", str(folder)], folder
        )
        assert watcher.stdout is not None
        watcher.stdout.readline()
        return watcher, samples
    if variant == "screen":
        ready = work / f"ready-{time.monotonic_ns()}"
        watcher, samples = watch_child(
            [sys.executable, str(HERE / "watch_screen_probe.py"), str(folder), str(ready)], folder
        )
        while not ready.exists():
            time.sleep(0.01)
        return watcher, samples
    return None


def run_one(variant: str, replays: int, rate: float, per: int, work: Path) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(dir=work))
    done = threading.Event()
    result: dict[str, Any] = {"latency": [], "decided": []}
    started = start_watcher(variant, folder, work)
    watcher, samples = started if started is not None else (None, [])
    t0 = time.monotonic()
    rec = start_record(folder, ["--rate", str(rate), "--per-replay", str(per)])
    driver = threading.Thread(target=drive, args=(rec, replays))
    driver.start()
    if variant == "tail":
        holder: list[list[float]] = []
        reader = threading.Thread(target=lambda: holder.append(tail(folder, done)))
        reader.start()
        driver.join()
        done.set()
        reader.join()
        result["latency"] = holder[0]
    else:
        assert watcher is not None and watcher.stdout is not None
        guard = threading.Thread(target=stop_after, args=(watcher, driver, result), daemon=True)
        guard.start()
        base: float | None = None
        for line in watcher.stdout:
            now = time.time()
            event = json.loads(line)
            if variant == "screen":
                result.update(event)  # the probe's one line of figures
                continue
            if event["event"] == "trace_started":
                base = datetime.fromisoformat(
                    event["started_at"].replace("Z", "+00:00")
                ).timestamp()
            elif base is not None and event.get("t_ms") is not None:
                late = (now - base) * 1000 - event["t_ms"]
                # a response and a finding come once the analyzer has decided them: apart
                decided = event["event"] in ("response", "finding")
                result["decided" if decided else "latency"].append(late)
        driver.join()
        watcher.wait()
        result["cpu"], result["rss"] = cpu_and_rss([s for s in samples if s[0] >= t0])
        mine = [s for s in samples if s[0] >= t0]
        used = mine[-1][1] - mine[0][1] if len(mine) >= 2 else float("nan")
        result["cpu_per_10k"] = used / (replays * per) * 10_000
    result["seconds"] = time.monotonic() - t0
    return result


def stop_after(
    watcher: subprocess.Popen[bytes], driver: threading.Thread, result: dict[str, Any]
) -> None:
    """A hang guard: a recording that ends without its `exit` record (the recorder killed)
    never ends for the watcher; it is stopped 120 s after the client finished."""
    driver.join()
    try:
        watcher.wait(timeout=120)
    except subprocess.TimeoutExpired:
        result["stopped"] = True
        watcher.terminate()


def cpu_and_rss(samples: list[tuple[float, float, float]]) -> tuple[float, tuple[float, float]]:
    """The CPU share over the run, and the RSS a quarter into it and at its peak."""
    if len(samples) < 4:
        return float("nan"), (float("nan"), float("nan"))
    (t0, c0, _), (t1, c1, _) = samples[0], samples[-1]
    quarter = samples[len(samples) // 4][2]
    return (c1 - c0) / max(t1 - t0, 1e-9), (quarter, max(s[2] for s in samples))


def quiet(work: Path, seconds: float = 5.0) -> list[float]:
    """Stamp -> file when the agent writes one stderr line every 0.5 s and nothing else."""
    folder = Path(tempfile.mkdtemp(dir=work))
    rec = start_record(folder, ["--quiet", "0.5"])
    done = threading.Event()
    holder: list[list[float]] = []
    reader = threading.Thread(target=lambda: holder.append(tail(folder, done, sample=1)))
    reader.start()
    time.sleep(seconds)
    assert rec.stdin is not None
    rec.stdin.close()
    rec.wait()
    done.set()
    reader.join()
    return holder[0][1:]  # the first stamp is the header's


def tap_rate(variant: str, work: Path, replays: int, per: int) -> float:
    """Updates a second through the tap when the agent sends as fast as it can (the client
    reading every line), with this variant's watcher following the trace (`none`: none)."""
    folder = Path(tempfile.mkdtemp(dir=work))
    started = start_watcher(variant, folder, work)
    done = threading.Event()
    reader: threading.Thread | None = None
    if variant == "tail":
        reader = threading.Thread(target=tail, args=(folder, done), daemon=True)
        reader.start()
    rec = start_record(folder, ["--rate", "1e12", "--per-replay", str(per), "--gap", "0"])
    seconds = drive(rec, replays)
    done.set()
    if reader is not None:
        reader.join()
    if started is not None:
        watcher = started[0]
        assert watcher.stdout is not None
        watcher.stdout.read()
        try:
            watcher.wait(timeout=300)  # a hang guard: it ends once it has read the trace
        except subprocess.TimeoutExpired:
            watcher.terminate()
            watcher.wait()
    return replays * per / seconds


def throughput(work: Path, updates: int = 100_000, per: int = 5_000) -> dict[str, float]:
    """CPU seconds (this process's, so a loaded machine does not count) the engine spends per
    10,000 updates of a finished trace read whole: following, the live picture, parsing for
    the analyzer and its runs (interval 1 s of the trace's own time is not simulated: every
    step may analyze, a worst case), and the peak of the analyzer's rows kept."""
    sys.path.insert(0, str(benchlib.ROOT / "src"))
    from acp_trace.watch.engine import Engine

    path = work / "throughput.jsonl"
    lines = [
        json.dumps(
            {
                "acp_trace": 1,
                "kind": "header",
                "started_at": "2026-12-01T00:00:00Z",
                "command": ["flood"],
            }
        )
    ]
    seq = 0

    def add(src: str, msg: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        lines.append(json.dumps({"seq": seq, "t_ns": seq * 100_000, "src": src, "msg": msg}))

    sys.path.insert(0, str(HERE))
    from flood_agent import update

    add(
        "client",
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}},
    )
    add("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2}})
    for r in range(updates // per):
        rid = 1 + r
        params = {"sessionId": "flood", "cwd": "/tmp", "replayFrom": {"type": "start"}}
        add("client", {"jsonrpc": "2.0", "id": rid, "method": "session/resume", "params": params})
        for n in range(per):
            add("agent", json.loads(update("flood", n)))
        marker = {"sessionId": "flood", "update": {"sessionUpdate": "replay_complete"}}
        add("agent", {"jsonrpc": "2.0", "method": "session/update", "params": marker})
        add("agent", {"jsonrpc": "2.0", "id": rid, "result": {}})
    path.write_text("\n".join(lines) + "\n")
    engine = Engine([str(path)], interval=1.0)
    engine.judge.warm()
    start, peak = time.process_time(), 0
    clock = 0.0  # seconds
    engine.clock = lambda: clock
    while engine.lines_read < len(lines) or not engine.judge_idle():
        before, wall = engine.lines_read, time.perf_counter()
        engine.step()
        # the clock the engine sees: the trace's pace (10,000 updates a second), or the time
        # the step took when that is longer (the analyzer's wait is in that clock)
        clock += max((engine.lines_read - before) / 10_000, time.perf_counter() - wall, 0.05)
        peak = max(peak, max((b.rows for b in engine.judge.books.values()), default=0))
    cpu = time.process_time() - start
    return {
        "cpu_per_10k": cpu / (updates / 10_000),
        "analysis_share": engine.judge.seconds / cpu,
        "peak_rows": peak,
        "runs": engine.judge.runs,
    }


VARIANTS = ("tail", "jsonl", "screen")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=10_000.0, help="updates a second")
    parser.add_argument("--replays", type=int, default=20, help="resumes per run")
    parser.add_argument("--per-replay", type=int, default=5_000, help="updates per resume")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--tap-replays", type=int, default=10, help="resumes, tap at full speed")
    parser.add_argument("--quiet-seconds", type=float, default=5.0)
    parser.add_argument("--throughput", type=int, default=100_000, help="updates, engine alone")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    rates: dict[str, list[float]] = {v: [] for v in ("none", *VARIANTS)}
    for _rep, variant in benchlib.rounds(list(runs), args.reps):
        runs[variant].append(run_one(variant, args.replays, args.rate, args.per_replay, work))
    for _rep, variant in benchlib.rounds(list(rates), args.reps):
        rates[variant].append(tap_rate(variant, work, args.tap_replays, args.per_replay))
    figures = latency_figures(runs)
    tails = median([v for r in runs["tail"] for v in r["latency"]])
    for variant in ("jsonl", "screen"):
        lat = median([v for r in runs[variant] for v in r["latency"]])
        figures.append(Figure(f"{variant} / tail (the floor), median", lat / tails, "-", None, ""))
    bare = median(rates["none"])
    figures.append(
        Figure("tap at full speed, no watcher", bare, "-", None, " updates/s", "the agent unpaced")
    )
    for variant in VARIANTS:
        ratio = median(rates[variant]) / bare
        figures.append(
            Figure(
                f"tap at full speed with {variant} / without",
                ratio,
                "~1",
                None,
                "",
                f"{median(rates[variant]):.0f} updates/s",
            )
        )
    tp = throughput(work, args.throughput)
    figures.append(
        Figure(
            "engine alone: CPU s per 10,000 updates",
            tp["cpu_per_10k"],
            "<1s",
            tp["cpu_per_10k"] < 1,
            "s",
            f"{tp['runs']:.0f} analyses",
        )
    )
    figures.append(
        Figure(
            "engine alone: analyzer rows kept, peak",
            tp["peak_rows"],
            "bounded",
            None,
            "",
            f"of {args.throughput} updates",
        )
    )
    q = quiet(work, args.quiet_seconds)
    figures.append(
        Figure(
            "quiet traffic: stamp -> in the file, median",
            median(q),
            "<100ms",
            median(q) < 100,
            "ms",
            f"{len(q)} lines",
        )
    )
    figures.append(
        Figure(
            "quiet traffic: stamp -> in the file, max",
            max(q) if q else float("nan"),
            "<100ms",
            bool(q) and max(q) < 100,
            "ms",
        )
    )
    seconds = median([r["seconds"] for rs in runs.values() for r in rs])
    extra = {
        "rate": args.rate,
        "replays": args.replays,
        "per_replay": args.per_replay,
        "run_seconds": seconds,
        "tap_rates": rates,
        "load": os.getloadavg(),
    }
    benchlib.report("watch", figures, extra, args.json)
    print(
        f"load average {os.getloadavg()}; a run took {seconds:.1f} s for "
        f"{args.replays * args.per_replay} updates"
    )


def latency_figures(runs: dict[str, list[dict[str, Any]]]) -> list[Figure]:
    """Stamp -> seen per variant, and each watcher's CPU and memory."""
    figures = []
    for variant, results in runs.items():
        lat = [v for r in results for v in r["latency"]]
        ok = None if variant == "tail" else median(lat) < TARGET_MS
        seen = "painted" if variant == "screen" else "event" if variant == "jsonl" else "in file"
        for q, name in ((50, "median"), (90, "p90")):
            figures.append(
                Figure(
                    f"{variant}: stamp -> {seen}, {name}",
                    percentile(lat, q),
                    f"<{TARGET_MS:.0f}ms" if q == 50 else "-",
                    ok if q == 50 else None,
                    "ms",
                    f"{len(lat)} samples" if q == 50 else "",
                )
            )
        decided = [v for r in results for v in r.get("decided", [])]
        if decided:
            figures.append(
                Figure(
                    f"{variant}: response -> outcome decided, median",
                    median(decided),
                    "-",
                    None,
                    "ms",
                )
            )
        if variant == "tail":
            continue
        per = median([r["cpu_per_10k"] for r in results])
        figures.append(
            Figure(
                f"{variant}: CPU s per 10,000 updates",
                per,
                "<1s",
                per < 1,
                "s",
                "one core keeps up",
            )
        )
        cpu = median([r["cpu"] for r in results])
        figures.append(Figure(f"{variant}: CPU share of one core (wall)", cpu, "-", None, ""))
        early, peak = results[-1]["rss"]
        figures.append(
            Figure(
                f"{variant}: RSS at a quarter / peak",
                early / peak if peak else float("nan"),
                "~1",
                None,
                "",
                f"{early:.0f} MB / {peak:.0f} MB",
            )
        )
    return figures


if __name__ == "__main__":
    main()
