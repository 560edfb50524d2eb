"""The weight pass's cost (issue 42: `replays`, `check` and `report` at most +15% in time and
memory): the same commands in this tree and in the tree before the weight pass, on the real
200-turn replays of claude-agent-acp, codex-acp and gemini-cli (peer_replays.py) and on one
generated replay of about 150 MB shaped like a codex session (gen_trace.py --codex-like).

    git worktree add /tmp/acp-before 7827202                       # the tree before it
    python benchmarks/peer_replays.py /tmp/acp-weight-bench/peers   # needs node, npm, unshare
    python benchmarks/bench_weight.py --baseline /tmp/acp-before/src --mb 150 \\
        --trace /tmp/acp-weight-bench/peers/*.jsonl --work /tmp/acp-weight-bench

Each (trace, tree, command) runs in a child process of its own on one core (taskset -c 0,
POLARS_MAX_THREADS=1), once, as the CLI would run it: the rounds interleaved, after one warm-up
child per tree that compiles its modules (into a private pycache, not the trees). Measured: the
child's CPU time, whole (interpreter, imports and all: what a person waits for) and its
analysis alone (after the imports: reading the trace, then the stage: `replays` the table,
`check` the table, the findings and the losses as the CLI asks them, `report` the bundle
`write_report` writes into a temporary folder); and its peak memory (ru_maxrss). In this tree
the weight pass alone is timed too (its fields and its three rules, on an analysis whose
timeline and facts are ready, a second run in the same process: without first-call costs).
Prints the ratios (never asserts them).
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


def child(path: str, command: str) -> None:
    """Run `command` on `path` once; print the CPU times of its parts as JSON."""
    if command == "weight":
        return weight_child(path)
    c0 = time.process_time()
    from acp_trace.analysis import analyze

    with tempfile.TemporaryDirectory(prefix="acp-bench-weight-") as tmp:
        c1 = time.process_time()
        a = analyze(path)
        a.records  # noqa: B018 - read now
        c2 = time.process_time()
        stage(a, command, Path(tmp))
        c3 = time.process_time()
    print(json.dumps({"imports": c1 - c0, "read": c2 - c1, "stage": c3 - c2}))


def weight_child(path: str) -> None:
    """The weight pass alone (this tree): the fields, then the three rules without the rest;
    the second of two runs."""
    from acp_trace.analysis import analyze
    from acp_trace.analysis.front import Analysis

    records = analyze(path).records
    out = {}
    for _ in range(2):
        b = Analysis(records)
        b.timeline, b.facts, b.turn_facts  # noqa: B018 - what the pass needs, ready
        t0 = time.process_time()
        b.weights  # noqa: B018
        t1 = time.process_time()
        b.findings(WEIGHT_RULES, schema=False)
        out = {"fields": t1 - t0, "rules": time.process_time() - t1}
    print(json.dumps(out))


def generate(folder: Path, mb: float) -> str:
    """The codex-like trace of about `mb` MB (kept when it is there already)."""
    path = folder / "codex-like.jsonl"
    if path.is_file() and abs(path.stat().st_size - mb * 1e6) < max(1e6, mb * 2e4):
        return str(path)
    argv = [python(), str(HERE / "gen_trace.py"), "--codex-like", "--mb", str(mb)]
    return str(run_child([*argv, "--out", str(folder)]).out["path"])


def child_env(tree: str, pycache: Path) -> dict[str, str]:
    """One core's worth of polars, the tree's modules compiled once into `pycache`."""
    env = {"PYTHONPATH": tree, "POLARS_MAX_THREADS": "1", "PYTHONDONTWRITEBYTECODE": ""}
    return {**env, "PYTHONPYCACHEPREFIX": str(pycache)}


def measure(
    traces: dict[str, str], trees: dict[str, str], reps: int, pycache: Path
) -> dict[tuple[str, str, str], list[dict[str, float]]]:
    """Every (trace, tree, command) child, `reps` times, the rounds interleaved; the weight
    pass alone in this tree."""
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    variants = [f"{t}|{s}|{c}" for t in traces for s in trees for c in COMMANDS]
    variants += [f"{t}|this tree|weight" for t in traces]
    times: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    for _rep, name in rounds(variants, reps):
        trace, tree, command = name.split("|")
        argv = [python(), __file__, "--child", traces[trace], "--command", command]
        run = run_child([*one_core, *argv], child_env(trees[tree], pycache))
        out = {**run.out, "cpu": run.cpu, "wall": run.wall, "rss": run.maxrss_mb}
        times.setdefault((trace, tree, command), []).append(out)
    return times


def warm_up(trace: str, trees: dict[str, str], pycache: Path) -> None:
    """A report per tree, discarded: every module it imports is compiled before the clock."""
    for tree in trees.values():
        argv = [python(), __file__, "--child", trace, "--command", "report"]
        run_child(argv, child_env(tree, pycache))


def _median(runs: list[dict[str, float]], key: str) -> float:
    if key == "analysis":
        return median([r["read"] + r["stage"] for r in runs])
    return median([r[key] for r in runs])


def figures(times: dict[tuple[str, str, str], list[dict[str, float]]], baseline: bool) -> list:
    """Per trace and command: CPU time (whole, and the analysis alone) and peak memory, each
    against the baseline; per trace: the weight pass alone."""
    out = []
    target = f"<= {TARGET:.2f}"
    measures = (
        ("cpu", "time", " s"),
        ("analysis", "analysis time", " s"),
        ("rss", "memory", " MB"),
    )
    for trace in dict.fromkeys(t for t, _, _ in times):
        for command in COMMANDS:
            mine = times[(trace, "this tree", command)]
            for key, what, unit in measures:
                value = _median(mine, key)
                out.append(Figure(f"{trace}: {command} {what}", value, "-", None, unit))
                if not baseline:
                    continue
                base = _median(times[(trace, "baseline", command)], key)
                ratio = value / base if base else float("nan")
                note = f"baseline {base:.4g}{unit}"
                name = f"{trace}: {command} {what} / baseline"
                out.append(Figure(name, ratio, target, ratio <= TARGET, "x", note))
        alone = times[(trace, "this tree", "weight")]
        fields, rules = _median(alone, "fields"), _median(alone, "rules")
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
    parser.add_argument("--reps", type=int, default=3, help="rounds for traces of 10 MB or more")
    parser.add_argument("--small-reps", type=int, default=9, help="rounds for smaller traces")
    parser.add_argument("--work", type=Path, help="where the codex-like trace goes (kept)")
    parser.add_argument("--json", help="save the figures here")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.command)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="acp-weight-bench-"))
    traces = {Path(t).stem: str(Path(t).resolve()) for t in args.trace}
    if args.mb:
        traces[f"codex-like {args.mb:g} MB"] = generate(work / "codex-like", args.mb)
    trees = {"this tree": str(SRC)}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    load_before = os.getloadavg()[0]
    pycache = work / "pycache"
    times: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    small = {k: v for k, v in traces.items() if Path(v).stat().st_size < 10_000_000}
    large = {k: v for k, v in traces.items() if k not in small}
    warm_up(min(traces.values(), key=lambda t: Path(t).stat().st_size), trees, pycache)
    for group, reps in ((small, args.small_reps), (large, args.reps)):
        if group:
            times.update(measure(group, trees, reps, pycache))
    found = [*figures(times, bool(args.baseline))]
    found.append(load_figure(load_before, os.getloadavg()[0]))
    extra = {"traces": traces, "runs": {"|".join(k): v for k, v in times.items()}}
    report("weight pass", found, extra, args.json)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
