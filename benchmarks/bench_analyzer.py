"""Analyzer benchmark: the CLI and the library end to end against an orjson parse-only loop,
on one core and on two, peak memory, growth from --mb to --large-mb and --huge-mb, many small
files against one, the CLI's own start.

    .venv/bin/python benchmarks/bench_analyzer.py                 # 100 MB, 1 GB and 2 GB
    .venv/bin/python benchmarks/bench_analyzer.py --large-mb 0 --huge-mb 0 --reps 5  # 100 MB

The traces are generated once (gen_trace.py) into --work (default: a directory under the
system's temp dir, outside the repository) and reused while their parameters stay the same.
Every variant runs in a child process of its own, the rounds interleaved; a child times its
work after its imports (the CLI variants time the whole process), and its peak RSS comes
from wait4. "One core" pins the child with `taskset -c 0` and POLARS_MAX_THREADS=1; "two
cores" reads with `workers=2` (`--workers 2`). Variants:

- orjson: `orjson.loads` of every line in a Python loop that does nothing else (the
  parse-only reference of the targets);
- cli-replays, cli-check: `acp-trace replays -f json` and `acp-trace check -f json`, the
  whole process (interpreter, imports, output), on one core;
- analyze-1, analyze-2: `a = acp_trace.analyze(paths); a.replays; a.findings()` on one core
  and on two, with the time of each stage (read, timeline, replay pass, turns, checks);
- read-1, read-2: `read_trace(paths)` alone, on one core and on two;
- ndjson: `polars.read_ndjson` of every line with the envelope's schema (reference);
- plain: plain_replays.py, the json module and dicts (the same outcome logic, simplest form);
- cli-floor: read_floor.py as a process of its own, on one core: polars imported, every
  record decoded by msgspec as the reader decodes it, three columns kept (the least a
  records table built from these libraries costs; the end-to-end target's floor);
- cli-replays-2, cli-check-2 (small files): the CLI with `--workers 2` (the fleet pool).

Prints the figures against the targets of docs/performance.md (never asserts them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ChildRun, Figure, median, python, report, rounds, run_child

HERE = Path(__file__).resolve().parent
ENVELOPE = {"seq": "Int64", "t_ns": "Int64", "src": "String"}

# ---------------------------------------------------------------- the child side


def trace_files(paths: list[str]) -> list[str]:
    out: list[str] = []
    for arg in paths:
        path = Path(arg)
        out.extend(sorted(map(str, path.rglob("*.jsonl"))) if path.is_dir() else [arg])
    return out


def child(variant: str, paths: list[str]) -> dict[str, Any]:
    """Run one variant (imports first, then the timed work); what it found, for cross-checks."""
    if variant.startswith("cli-"):
        return cli_child(variant.removeprefix("cli-"), paths)
    files = trace_files(paths)
    import orjson
    import plain_replays
    import polars as pl

    import acp_trace
    from acp_trace.trace.reader import read_trace

    workers = 2 if variant.endswith("-2") else 1
    start, cpu = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {}
    if variant.startswith("analyze"):
        extra = {} if variant == "analyze-base" else {"workers": workers}
        a = acp_trace.analyze(paths, **extra)  # reads the traces
        out["stages"] = stages = {"read": time.perf_counter() - start}
        made: dict[str, Any] = {}
        for stage, run in (
            ("timeline", lambda: a.timeline),
            ("replay pass", lambda: (a.facts, a.replays)),
            ("turns", lambda: a.turn_facts),
            ("checks", lambda: a.findings()),
        ):
            began = time.perf_counter()
            made[stage] = run()
            stages[stage] = time.perf_counter() - began
        table = a.replays
        out["findings"] = made["checks"].height  # once: the baseline tree kept no checks
        out["outcomes"] = dict(Counter(table["outcome"].to_list()))
        out["history_updates"] = int(table["history_updates"].sum())
    elif variant.startswith("read"):
        out["rows"] = read_trace(paths, workers=workers).height
    elif variant == "ndjson":
        schema = {k: getattr(pl, v) for k, v in ENVELOPE.items()}
        out["rows"] = sum(pl.read_ndjson(f, schema=schema).height for f in files)
    elif variant == "orjson":
        rows = 0
        for f in files:
            with open(f, "rb") as handle:
                for line in handle:
                    orjson.loads(line)
                    rows += 1
        out["rows"] = rows
    elif variant == "plain":
        found = list(plain_replays.replays(files))
        out["outcomes"] = dict(Counter(r["outcome"] for r in found))
        out["history_updates"] = sum(r["history_updates"] for r in found)
    else:
        raise SystemExit(f"unknown variant {variant}")
    out["seconds"] = time.perf_counter() - start
    out["cpu"] = time.process_time() - cpu  # this process's CPU (not its workers')
    return out


def cli_child(command: str, paths: list[str]) -> dict[str, Any]:
    """Time one CLI command as a process of its own (its output goes to /dev/null)."""
    import subprocess

    workers = "2" if command.endswith("-2") else "1"
    command = command.removesuffix("-2")
    argv = [sys.executable, "-m", "acp_trace", command, "-f", "json", "--workers", workers, *paths]
    if command == "floor":
        argv = [sys.executable, str(HERE / "read_floor.py"), *paths]
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # check exits 1 when it finds an error
        raise SystemExit(f"{' '.join(argv)}: exit {code}: {err.decode(errors='replace')[-2000:]}")
    return {"seconds": seconds, "cpu": cpu, "grandchild_rss_mb": usage.ru_maxrss / 1024}


# ---------------------------------------------------------------- the data


def dataset(
    work: Path, name: str, mb: float, files: int, history: int, prompts: int = 3
) -> dict[str, Any]:
    """Generate (or reuse) a dataset; its generator summary (path, bytes, expected outcomes)."""
    folder = work / name
    stamp = folder / "summary.json"
    params = {"mb": mb, "files": files, "history": history, "prompts": prompts}
    params["generator"] = _generator_stamp()
    if stamp.exists():
        saved = json.loads(stamp.read_text())
        if saved.get("params") == params:
            return dict(saved["summary"])
    print(f"generating {name}: {mb:g} MB in {files} file(s), histories of {history}...", flush=True)
    argv = [python(), str(HERE / "gen_trace.py"), "--out", str(folder), "--mb", str(mb)]
    argv += ["--files", str(files), "--history", str(history), "--prompts", str(prompts)]
    summary = json.loads(_run(argv))
    stamp.write_text(json.dumps({"params": params, "summary": summary}))
    return dict(summary)


def _generator_stamp() -> str:
    """The generator's own content: the same script gives the same traces, whatever its
    file's time (another worktree's copy reuses them)."""
    import hashlib

    return hashlib.sha256((HERE / "gen_trace.py").read_bytes()).hexdigest()[:16]


def _run(argv: list[str]) -> str:
    import subprocess

    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------- the parent side

CLI = ("replays", "check")  # the commands timed as whole processes
ONE_CORE = (
    "orjson",
    "cli-replays",
    "cli-check",
    "cli-floor",
    "analyze-1",
    "read-1",
    "plain",
    "baseline",
)


def measure(
    specs: dict[str, tuple[str, str]], reps: int, baseline: Path | None
) -> dict[str, list[ChildRun]]:
    """Run every (variant, path) spec `reps` times, rounds interleaved; runs by spec label.
    The `baseline` variant is analyze-1 with acp_trace imported from another source tree."""
    runs: dict[str, list[ChildRun]] = {label: [] for label in specs}
    if reps < 1:
        return runs
    for rep, label in rounds(list(specs), reps):
        variant, path = specs[label]
        env: dict[str, str] = {}
        if variant == "baseline" and baseline:
            env["PYTHONPATH"] = str(baseline)
        child_variant = "analyze-base" if variant == "baseline" else variant
        argv = [python(), str(Path(__file__).resolve()), "--child", child_variant, path]
        if variant in ONE_CORE:
            argv = ["taskset", "-c", "0", *argv]
            env["POLARS_MAX_THREADS"] = "1"
        warm(path)
        run = run_child(argv, env or None)
        if "grandchild_rss_mb" in run.out:  # the CLI process's own peak
            run.maxrss_mb = max(run.maxrss_mb, run.out["grandchild_rss_mb"])
        runs[label].append(run)
        print(
            f"  round {rep + 1}: {label:<22} {run.out['seconds']:8.3f} s  cpu {run.out['cpu']:8.3f} s"
            f"  peak {run.maxrss_mb:7.0f} MB",
            flush=True,
        )
    return runs


def warm(path: str) -> None:
    """Read the input once, so that every variant starts with it in the page cache (this VM
    gives its cache back to the host: a cold 1 GB read doubled the orjson loop's time)."""
    for name in trace_files([path]):
        with open(name, "rb") as handle:
            while handle.read(1 << 24):
                pass


def secs(runs: list[ChildRun]) -> float:
    return median([r.out["seconds"] for r in runs])


def cpu(runs: list[ChildRun]) -> float:
    """CPU seconds (less sensitive than wall time to the other loads of a shared machine)."""
    return median([r.out["cpu"] for r in runs])


def peak(runs: list[ChildRun]) -> float:
    return max(r.maxrss_mb for r in runs)


def size_figures(tag: str, runs: dict[str, list[ChildRun]], data: dict[str, Any]) -> list[Figure]:
    """At one size: the CLI and the library against parse-only, 2 cores against 1, memory."""
    mb = data["bytes"] / 1e6
    what = f"{mb:.3g} MB"
    orj = secs(runs[f"orjson@{tag}"])
    figures = []
    orj_cpu = cpu(runs[f"orjson@{tag}"])
    for command in ("replays", "check"):
        cli = secs(runs[f"cli-{command}@{tag}"])
        cli_cpu = cpu(runs[f"cli-{command}@{tag}"])
        figures.append(
            Figure(
                f"{what}: cli {command} / orjson loop (1 core)",
                cli / orj,
                "<= 2",
                cli / orj <= 2,
                "x",
                f"{cli:.2f} s / {orj:.2f} s, the CLI's whole process; in CPU time "
                f"{cli_cpu:.2f} s / {orj_cpu:.2f} s = {cli_cpu / orj_cpu:.2f}x",
            )
        )
    if f"cli-floor@{tag}" in runs:
        least = secs(runs[f"cli-floor@{tag}"])
        figures.append(
            Figure(
                f"{what}: the floor (read_floor.py) / orjson loop (1 core)",
                least / orj,
                "-",
                None,
                "x",
                f"{least:.2f} s / {orj:.2f} s: polars imported, msgspec's decoding, 3 columns",
            )
        )
    one, two = secs(runs[f"analyze-1@{tag}"]), secs(runs[f"analyze-2@{tag}"])
    stages = runs[f"analyze-1@{tag}"][0].out["stages"]
    shares = ", ".join(f"{k} {v:.2f} s" for k, v in stages.items())
    figures += [
        Figure(f"{what}: analyze / orjson loop (1 core)", one / orj, "-", None, "x", shares),
        Figure(
            f"{what}: analyze 1 core / 2 cores",
            one / two,
            ">= 1.7",
            one / two >= 1.7,
            "x",
            f"{one:.2f} s / {two:.2f} s",
        ),
    ]
    read1, read2 = secs(runs[f"read-1@{tag}"]), secs(runs[f"read-2@{tag}"])
    read_cpu = cpu(runs[f"read-1@{tag}"])
    figures.append(
        Figure(
            f"{what}: read 1 core / 2 cores",
            read1 / read2,
            "-",
            None,
            "x",
            f"{read1:.2f} s / {read2:.2f} s; read alone / orjson loop {read1 / orj:.2f}x "
            f"(CPU {read_cpu / orj_cpu:.2f}x)",
        )
    )
    limit = 2 * mb + (100 if mb < 500 else 0)
    for label in (f"analyze-1@{tag}", f"analyze-2@{tag}"):
        used = peak(runs[label])
        target = f"<= {limit:.0f} MB"
        note = f"{used / mb:.2f}x the file"
        figures.append(
            Figure(f"{what}: peak RSS MB, {label}", used, target, used <= limit, "", note)
        )
    if f"plain@{tag}" in runs:
        plain = secs(runs[f"plain@{tag}"])
        ndjson = secs(runs[f"ndjson@{tag}"])
        note = f"plain loop {plain:.2f} s, read_ndjson of the envelope {ndjson:.2f} s"
        figures.append(Figure(f"{what}: plain loop / analyze", plain / one, "-", None, "x", note))
    return figures


def baseline_figures(runs: dict[str, list[ChildRun]], datasets: dict[str, Any]) -> list[Figure]:
    """Per dataset, how much faster and leaner this analyzer is than the baseline's."""
    figures = []
    for tag in datasets:
        if f"baseline@{tag}" not in runs:
            continue
        before, after = runs[f"baseline@{tag}"], runs[f"analyze-1@{tag}"]
        note = (
            f"baseline {secs(before):.2f} s, peak {peak(before):.0f} MB; "
            f"now {secs(after):.2f} s, peak {peak(after):.0f} MB"
        )
        figures.append(
            Figure(
                f"{tag}: baseline / analyze time", secs(before) / secs(after), "-", None, "x", note
            )
        )
    return figures


def check_agreement(runs: dict[str, list[ChildRun]], datasets: dict[str, dict[str, Any]]) -> None:
    """The analyzer and the plain loop find the generator's outcomes, or the figures mean nothing."""
    for tag, data in datasets.items():
        expected = {k: v for k, v in data["replays"].items() if v}
        for label in (f"analyze-1@{tag}", f"analyze-2@{tag}", f"plain@{tag}"):
            if label in runs and runs[label][0].out["outcomes"] != expected:
                raise SystemExit(
                    f"{label}: outcomes {runs[label][0].out['outcomes']} != {expected}"
                )
        if f"plain@{tag}" in runs:
            a, p = runs[f"analyze-1@{tag}"][0].out, runs[f"plain@{tag}"][0].out
            if a["history_updates"] != p["history_updates"]:
                raise SystemExit(
                    f"{tag}: history_updates differ: {a['history_updates']} != {p['history_updates']}"
                )


def startup_figures(reps: int) -> list[Figure]:
    """`acp-trace --help` and `acp-trace rules`: the process's time less the interpreter's."""
    import subprocess

    def wall(argv: list[str]) -> float:
        times = []
        for _ in range(reps):
            began = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times.append(time.perf_counter() - began)
        return median(times)

    bare = wall([python(), "-c", "pass"])
    figures = []
    for args in (["--help"], ["rules"]):
        own = wall([python(), "-m", "acp_trace", *args]) - bare
        figures.append(
            Figure(
                f"cli {' '.join(args)}: own time ms",
                own * 1000,
                "< 100",
                own < 0.1,
                "",
                f"interpreter alone {bare * 1000:.0f} ms",
            )
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=100.0, help="the base size (default 100)")
    parser.add_argument(
        "--large-mb", type=float, default=1000.0, help="the large size, 0 skips it (default 1000)"
    )
    parser.add_argument(
        "--huge-mb", type=float, default=2000.0, help="the huge size, 0 skips it (default 2000)"
    )
    parser.add_argument(
        "--files",
        type=int,
        default=10_000,
        help="small files of --mb in total, 0 skips (default 10000)",
    )
    parser.add_argument(
        "--history", type=int, default=10_000, help="replayed updates per resume (default 10000)"
    )
    parser.add_argument(
        "--files-history", type=int, default=10, help="per resume in the small files (default 10)"
    )
    parser.add_argument("--reps", type=int, default=3, help="rounds at --mb (default 3)")
    parser.add_argument(
        "--large-reps", type=int, default=2, help="rounds at the larger sizes (default 2)"
    )
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "acp-trace-bench"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a `src` directory of another acp-trace (e.g. from `git worktree add`): its "
        "analyze runs beside this one, for before/after figures in one run",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1:])))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    datasets = {
        "base": dataset(args.work, f"one-{args.mb:g}mb-h{args.history}", args.mb, 1, args.history)
    }
    for tag, size in (("large", args.large_mb), ("huge", args.huge_mb)):
        if size:
            name = f"one-{size:g}mb-h{args.history}"
            datasets[tag] = dataset(args.work, name, size, 1, args.history)
    if args.files:
        datasets["many"] = dataset(
            args.work,
            f"many-{args.files}-{args.mb:g}mb-h{args.files_history}p1",
            args.mb,
            args.files,
            args.files_history,
            1,
        )
        same_mb = round(datasets["many"]["bytes"] / 1e6, 1)  # one file of the same bytes
        datasets["one"] = dataset(
            args.work,
            f"one-{same_mb:g}mb-h{args.files_history}p1",
            same_mb,
            1,
            args.files_history,
            1,
        )
    specs: dict[str, tuple[str, str]] = {}
    sized = (
        "orjson",
        "cli-replays",
        "cli-check",
        "cli-floor",
        "analyze-1",
        "analyze-2",
        "read-1",
        "read-2",
    )
    for tag in ("base", "large", "huge"):
        if tag in datasets:
            for variant in (*sized, "plain", "ndjson") if tag == "base" else sized:
                specs[f"{variant}@{tag}"] = (variant, datasets[tag]["path"])
    for tag in ("many", "one"):
        if tag in datasets:
            many = ("analyze-1", "analyze-2", *(f"cli-{c}{w}" for c in CLI for w in ("", "-2")))
            for variant in many if tag == "many" else ("analyze-1",):
                specs[f"{variant}@{tag}"] = (variant, datasets[tag]["path"])
    if args.baseline:
        for tag, data in datasets.items():
            if tag != "huge":
                specs[f"baseline@{tag}"] = ("baseline", data["path"])
    small = {k: v for k, v in specs.items() if k.split("@")[1] in ("base", "many", "one")}
    runs = measure(small, args.reps, args.baseline)
    big = {k: v for k, v in specs.items() if k not in small}
    runs.update(measure(big, args.large_reps, args.baseline))
    check_agreement(runs, {t: d for t, d in datasets.items()})
    figures = []
    for tag in ("base", "large", "huge"):
        if tag in datasets:
            figures += size_figures(tag, runs, datasets[tag])
    for tag in ("large", "huge"):
        if tag in datasets:
            base = secs(runs["analyze-1@base"]) / datasets["base"]["bytes"]
            other = secs(runs[f"analyze-1@{tag}"]) / datasets[tag]["bytes"]
            mb = datasets[tag]["bytes"] / 1e6
            figures.append(
                Figure(
                    f"per-MB time, {mb:.3g} MB / base",
                    other / base,
                    "<= 1.3",
                    other / base <= 1.3,
                    "x",
                )
            )
    if "many" in datasets:
        many = secs(runs["analyze-1@many"]) / datasets["many"]["bytes"]
        one = secs(runs["analyze-1@one"]) / datasets["one"]["bytes"]
        note = f"{datasets['many']['files']} files: {secs(runs['analyze-1@many']):.2f} s, one file: {secs(runs['analyze-1@one']):.2f} s (per MB)"
        figures.append(
            Figure("many small files / one file", many / one, "<= 2", many / one <= 2, "x", note)
        )
        one_core, two_cores = secs(runs["analyze-1@many"]), secs(runs["analyze-2@many"])
        figures.append(
            Figure(
                "many small files: analyze 1 core / 2 cores",
                one_core / two_cores,
                ">= 1.7",
                one_core / two_cores >= 1.7,
                "x",
                f"{one_core:.2f} s / {two_cores:.2f} s",
            )
        )
        for command in CLI:
            one_core = secs(runs[f"cli-{command}@many"])
            two_cores = secs(runs[f"cli-{command}-2@many"])
            note = (
                f"{one_core:.2f} s / {two_cores:.2f} s; peak "
                f"{peak(runs[f'cli-{command}@many']):.0f} / "
                f"{peak(runs[f'cli-{command}-2@many']):.0f} MB"
            )
            figures.append(
                Figure(
                    f"many small files: cli {command} --workers 1 (1 core) / --workers 2",
                    one_core / two_cores,
                    ">= 1.7",
                    one_core / two_cores >= 1.7,
                    "x",
                    note,
                )
            )
    figures += startup_figures(args.reps)
    if args.baseline:
        figures += baseline_figures(runs, datasets)
    sizes = {
        t: {"bytes": d["bytes"], "lines": d["lines"], "files": d["files"]}
        for t, d in datasets.items()
    }
    report("analyzer", figures, {"datasets": sizes, "reps": args.reps}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
