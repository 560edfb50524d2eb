"""The weight pass's cost (issue 42: `replays`, `check` and `report` at most +15% in time and
memory): the same commands in this tree and in the tree before the weight pass, on the real
200-turn replays of claude-agent-acp, codex-acp and gemini-cli (peer_replays.py) and on one
generated replay of about 150 MB shaped like a codex session (gen_trace.py --codex-like).

    git worktree add /tmp/acp-before 7827202                       # the tree before it
    python benchmarks/peer_replays.py /tmp/acp-weight-bench/peers   # needs node, npm, unshare
    python benchmarks/bench_weight.py --baseline /tmp/acp-before/src --mb 150 \\
        --trace /tmp/acp-weight-bench/peers/*.jsonl --work /tmp/acp-weight-bench

Each (trace, tree, command) runs in a child process of its own on one core (taskset -c 0,
POLARS_MAX_THREADS=1), the rounds interleaved; a child times, after its imports, `--inner`
runs of the command from the trace's bytes (read, then the stage: `replays` the table, `check`
the table, the findings and the losses as the CLI asks them, `report` the bundle written by
`write_report` into a temporary folder), CPU time and wall time, and its peak memory is its
ru_maxrss. In this tree the weight pass alone is timed too (the fields and the three rules, on
an analysis whose timeline and facts are ready). Prints the ratios (never asserts them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Figure, load_figure, median, python, report, rounds, run_child

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
COMMANDS = ("replays", "check", "report")
WEIGHT_RULES = ["frame-over-client-limit", "silence-past-client-deadline"]
WEIGHT_RULES += ["replay-outlasts-quiet-window"]
TARGET = 1.15


def stage(a: Any, command: str, folder: Path) -> None:
    """What the command computes and writes, past reading the trace."""
    if command == "replays":
        a.replays.height  # noqa: B018
    elif command == "check":
        a.replays.height  # noqa: B018 - the CLI asks for these three tables
        a.findings().height  # noqa: B018
        a.losses.height  # noqa: B018
    else:
        from acp_trace.render.report.bundle import write_report

        write_report(a, folder / "report")
        shutil.rmtree(folder / "report")


def child(path: str, command: str, inner: int) -> None:
    """Time `inner` runs of `command` on `path`; print the medians as JSON."""
    from acp_trace.analysis import analyze

    if command == "weight":
        return weight_child(path, inner)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="acp-bench-weight-") as tmp:
        for _ in range(inner):
            c0, w0 = time.process_time(), time.perf_counter()
            a = analyze(path)
            a.records  # noqa: B018 - read now
            c1 = time.process_time()
            stage(a, command, Path(tmp))
            c2, w2 = time.process_time(), time.perf_counter()
            runs.append({"cpu": c2 - c0, "wall": w2 - w0, "read": c1 - c0, "stage": c2 - c1})
            del a
    print(json.dumps({k: median([r[k] for r in runs]) for k in runs[0]}))


def weight_child(path: str, inner: int) -> None:
    """The weight pass alone (this tree): the fields, then the three rules without the rest."""
    from acp_trace.analysis import analyze
    from acp_trace.analysis.front import Analysis

    records = analyze(path).records
    runs = []
    for _ in range(inner):
        b = Analysis(records)
        b.timeline, b.facts, b.turn_facts  # noqa: B018 - what the pass needs, ready
        t0 = time.process_time()
        b.weights  # noqa: B018
        t1 = time.process_time()
        b.findings(WEIGHT_RULES, schema=False)
        runs.append({"fields": t1 - t0, "rules": time.process_time() - t1})
    print(json.dumps({k: median([r[k] for r in runs]) for k in runs[0]}))


def generate(folder: Path, mb: float) -> str:
    """The codex-like trace of about `mb` MB (kept when it is there already)."""
    path = folder / "codex-like.jsonl"
    if path.is_file() and abs(path.stat().st_size - mb * 1e6) < max(1e6, mb * 2e4):
        return str(path)
    argv = [python(), str(HERE / "gen_trace.py"), "--codex-like", "--mb", str(mb)]
    return str(run_child([*argv, "--out", str(folder)]).out["path"])


def measure(
    traces: dict[str, str], trees: dict[str, str], reps: int, inner: int
) -> dict[tuple[str, str, str], list[dict[str, float]]]:
    """Every (trace, tree, command) child, `reps` times, the rounds interleaved; the weight
    pass alone in this tree."""
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    variants = [f"{t}|{s}|{c}" for t in traces for s in trees for c in COMMANDS]
    variants += [f"{t}|this tree|weight" for t in traces]
    times: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    for _rep, name in rounds(variants, reps):
        trace, tree, command = name.split("|")
        env = {"PYTHONPATH": trees[tree], "POLARS_MAX_THREADS": "1"}
        argv = [python(), __file__, "--child", traces[trace], "--command", command]
        run = run_child([*one_core, *argv, "--inner", str(inner)], env)
        times.setdefault((trace, tree, command), []).append({**run.out, "rss": run.maxrss_mb})
    return times


def figures(times: dict[tuple[str, str, str], list[dict[str, float]]], baseline: bool) -> list:
    out = []
    for trace in dict.fromkeys(t for t, _, _ in times):
        for command in COMMANDS:
            mine = times[(trace, "this tree", command)]
            cpu, rss = median([m["cpu"] for m in mine]), median([m["rss"] for m in mine])
            wall = median([m["wall"] for m in mine])
            out.append(
                Figure(f"{trace}: {command} cpu", cpu, "-", None, " s", f"wall {wall:.3g} s")
            )
            out.append(Figure(f"{trace}: {command} peak memory", rss, "-", None, " MB"))
            if not baseline:
                continue
            base = times[(trace, "baseline", command)]
            b_cpu, b_rss = median([m["cpu"] for m in base]), median([m["rss"] for m in base])
            b_wall = median([m["wall"] for m in base])
            b_stage = median([m["stage"] for m in base])
            stage_ratio = median([m["stage"] for m in mine]) / b_stage if b_stage else 0.0
            note = f"baseline {b_cpu:.3g} s; wall {wall / b_wall:.3f}x; stage {stage_ratio:.3f}x"
            ratio = cpu / b_cpu
            target = f"<= {TARGET:.2f}"
            out.append(
                Figure(
                    f"{trace}: {command} cpu / baseline", ratio, target, ratio <= TARGET, "x", note
                )
            )
            ratio = rss / b_rss
            note = f"baseline {b_rss:.4g} MB"
            out.append(
                Figure(
                    f"{trace}: {command} memory / baseline",
                    ratio,
                    target,
                    ratio <= TARGET,
                    "x",
                    note,
                )
            )
        alone = times[(trace, "this tree", "weight")]
        fields, rules = median([m["fields"] for m in alone]), median([m["rules"] for m in alone])
        note = f"fields {fields:.3g} s, rules {rules:.3g} s"
        out.append(Figure(f"{trace}: weight pass alone", fields + rules, "-", None, " s", note))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--command", choices=[*COMMANDS, "weight"], help=argparse.SUPPRESS)
    parser.add_argument("--baseline", help="the src/ of the tree before the weight pass")
    parser.add_argument("--trace", nargs="*", default=[], help="traces to measure as they are")
    parser.add_argument("--mb", type=float, default=150.0, help="the codex-like trace (0: none)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--inner", type=int, default=5, help="runs per child, traces under 10 MB")
    parser.add_argument("--work", type=Path, help="where the codex-like trace goes (kept)")
    parser.add_argument("--json", help="save the figures here")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.command, args.inner)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="acp-weight-bench-"))
    traces = {Path(t).stem: str(Path(t).resolve()) for t in args.trace}
    if args.mb:
        traces[f"codex-like {args.mb:g} MB"] = generate(work / "codex-like", args.mb)
    trees = {"this tree": str(SRC)}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    load_before = os.getloadavg()[0]
    times: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    small = {k: v for k, v in traces.items() if Path(v).stat().st_size < 10_000_000}
    large = {k: v for k, v in traces.items() if k not in small}
    for group, inner in ((small, args.inner), (large, 1)):
        if group:
            times.update(measure(group, trees, args.reps, inner))
    found = [*figures(times, bool(args.baseline))]
    found.append(load_figure(load_before, os.getloadavg()[0]))
    extra = {"traces": traces, "runs": {"|".join(k): v for k, v in times.items()}}
    report("weight pass", found, extra, args.json)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
