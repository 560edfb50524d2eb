"""The fidelity pass's cost (issue 41: at most +20% on `replays` and `check`, linear in the
trace): the same analysis in this tree and in the tree before it, on one trace where every
session is resumed twice (gen_trace.py --resumes 2: the second replay has a source).

    git worktree add /tmp/acp-base <commit-before>            # the tree to compare with
    .venv/bin/python benchmarks/bench_fidelity.py --baseline /tmp/acp-base/src --mb 100
    .venv/bin/python benchmarks/bench_fidelity.py --mb 100 --mb2 200   # linear: 100 MB vs 200

Each variant runs in a child process of its own on one core (taskset -c 0,
POLARS_MAX_THREADS=1), the rounds interleaved. A child times, after its imports: reading the
trace, `replays` (the table, which now holds the fidelity fields) and `check` (the findings,
after `replays`: `replays+check` is what the `check` command pays), and, in this tree, the
fidelity pass alone; each also in CPU seconds of the child (`cpu`: what other processes on a
shared machine move less). Prints the ratios (never asserts them).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Figure, median, python, report, rounds, run_child

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def child(path: str) -> None:
    """Time one analysis of `path` and print it as JSON (run as `--child PATH`)."""
    from acp_trace.analysis import analyze

    clock, cpu = time.perf_counter, time.process_time
    t0 = clock()
    a = analyze(path)
    a.records  # noqa: B018 - read now
    t1, c1 = clock(), cpu()
    rows = a.replays.height
    t2, c2 = clock(), cpu()
    findings = a.findings().height
    t3, c3 = clock(), cpu()
    out = {"read": t1 - t0, "replays": t2 - t1, "check": t3 - t2, "rows": rows, "found": findings}
    out |= {"replays_cpu": c2 - c1, "check_cpu": c3 - c2}
    if hasattr(a, "fidelity"):  # this tree: the pass alone, on a fresh Analysis of the same records
        from acp_trace.analysis.front import Analysis

        b = Analysis(a.records)
        b.turn_facts  # noqa: B018 - what the pass needs, computed before the clock starts
        t4, c4 = clock(), cpu()
        b.fidelity  # noqa: B018
        out["fidelity"], out["fidelity_cpu"] = clock() - t4, cpu() - c4
    print(json.dumps(out))


def _stage(m: dict[str, float], stage: str) -> float:
    """A stage's seconds: `replays+check` is what `acp-trace check` pays after reading (the
    findings need the fidelity pass, which `replays` runs first in one process); ` cpu`: in
    CPU seconds."""
    cpu = stage.endswith(" cpu")
    names = stage.removesuffix(" cpu").split("+")
    return sum(m[name + ("_cpu" if cpu else "")] for name in names)


def generate(folder: Path, mb: float) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    argv = [python(), str(HERE / "gen_trace.py"), "--out", str(folder), "--mb", str(mb)]
    argv += ["--history", "2000", "--prompts", "3", "--resumes", "2"]
    done = run_child(argv)
    return str(done.out["path"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", help="the src/ of the tree before the fidelity pass")
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--mb2", type=float, default=0.0, help="a second size, for linearity")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--work", type=Path, help="where the traces go (default: a temp dir)")
    parser.add_argument("--json", help="save the figures here")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="acp-fidelity-bench-"))
    traces = {f"{args.mb:g} MB": generate(work / "a", args.mb)}
    if args.mb2:
        traces[f"{args.mb2:g} MB"] = generate(work / "b", args.mb2)
    trees = {"this tree": str(SRC)}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    times: dict[tuple[str, str], list[dict[str, float]]] = {}
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    variants = [(t, s) for t in traces for s in trees]
    for _rep, name in rounds([f"{t}|{s}" for t, s in variants], args.reps):
        size, tree = name.split("|")
        env = {"PYTHONPATH": trees[tree], "POLARS_MAX_THREADS": "1"}
        run = run_child([*one_core, python(), __file__, "--child", traces[size]], env)
        times.setdefault((size, tree), []).append(run.out)
    figures = []
    for size in traces:
        mine = times[(size, "this tree")]
        for stage in ("replays", "check", "replays+check", "replays cpu", "replays+check cpu"):
            value = median([_stage(m, stage) for m in mine])
            figures.append(Figure(f"{size}: {stage} (this tree)", value, "-", None, " s"))
            if args.baseline:
                base = median([_stage(m, stage) for m in times[(size, "baseline")]])
                ratio = value / base
                note = f"baseline {base:.2f} s"
                figures.append(
                    Figure(f"{size}: {stage} / baseline", ratio, "<= 1.20", ratio <= 1.2, "x", note)
                )
        for stage in ("fidelity", "fidelity_cpu"):
            alone = median([m[stage] for m in mine])
            name = f"{size}: fidelity pass alone" + (" (cpu)" if stage.endswith("cpu") else "")
            figures.append(Figure(name, alone, "-", None, " s"))
    if args.mb2:
        for stage in ("fidelity", "fidelity_cpu"):
            small, large = (median([m[stage] for m in times[(s, "this tree")]]) for s in traces)
            name = "fidelity pass: large / small" + (" (cpu)" if stage.endswith("cpu") else "")
            figures.append(Figure(name, large / small, f"~{args.mb2 / args.mb:g}", None, "x"))
    report("fidelity pass", figures, {"traces": traces}, args.json)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
