"""Analyzer benchmark: `replays` plus `check` end to end against a parse-only pass and a plain
Python loop, peak memory, growth from --mb to --large-mb, many small files against one.

    .venv/bin/python benchmarks/bench_analyzer.py                     # 100 MB and 1 GB
    .venv/bin/python benchmarks/bench_analyzer.py --large-mb 0 --reps 5   # 100 MB only

The traces are generated once (gen_trace.py) into --work (default: a directory under the
system's temp dir, outside the repository) and reused while their parameters stay the same.
Every variant runs in a child process of its own, the rounds interleaved; a child times its
work after its imports, and its peak RSS comes from wait4. Variants:

- analyze: `a = acp_trace.analyze(paths); a.replays; a.findings()`;
- ndjson: `polars.read_ndjson` of every line with the envelope's schema (seq, t_ns, src);
- orjson: `orjson.loads` of every line in a Python loop that does nothing else;
- plain: plain_replays.py, the json module and dicts (the same outcome logic, simplest form);
- ndjson-fields: `polars.read_ndjson` with a schema that also takes the message fields the
  analyzer needs (method, id, sessions, update kind, messageId, error code): what a native
  reader would pay at least (reference, no target);
- fields: `orjson.loads` of every line plus taking the fields the analyzer needs (method, id,
  sessions, update kind) into row tuples, nothing else: the floor of any reader that parses
  line by line in Python, as acp_trace's does (shown for reference, no target).

Parse-only is the faster of ndjson and orjson. Prints the figures against the targets of
docs/performance.md (never asserts them).
"""

from __future__ import annotations

import argparse
import json
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
    files = trace_files(paths)
    import orjson
    import plain_replays
    import polars as pl

    import acp_trace

    start = time.perf_counter()
    out: dict[str, Any] = {}
    if variant == "analyze":
        a = acp_trace.analyze(paths)
        table = a.replays
        out["findings"] = a.findings().height
        out["outcomes"] = dict(Counter(table["outcome"].to_list()))
        out["history_updates"] = int(table["history_updates"].sum())
    elif variant == "ndjson":
        schema = {k: getattr(pl, v) for k, v in ENVELOPE.items()}
        out["rows"] = sum(pl.read_ndjson(f, schema=schema).height for f in files)
    elif variant == "ndjson-fields":
        schema = native_fields_schema()
        out["rows"] = sum(pl.read_ndjson(f, schema=schema).height for f in files)
    elif variant == "orjson":
        rows = 0
        for f in files:
            with open(f, "rb") as handle:
                for line in handle:
                    orjson.loads(line)
                    rows += 1
        out["rows"] = rows
    elif variant == "fields":
        out["rows"] = sum(len(fields_floor(f)) for f in files)
    elif variant == "plain":
        found = list(plain_replays.replays(files))
        out["outcomes"] = dict(Counter(r["outcome"] for r in found))
        out["history_updates"] = sum(r["history_updates"] for r in found)
    else:
        raise SystemExit(f"unknown variant {variant}")
    out["seconds"] = time.perf_counter() - start
    return out


def native_fields_schema() -> dict[str, Any]:
    """The envelope plus the message fields the analyzer reads, as a polars schema."""
    import polars as pl

    def struct(**fields: Any) -> Any:
        return pl.Struct(fields)

    update = struct(sessionUpdate=pl.String, sessionId=pl.String, messageId=pl.String)
    msg = struct(
        jsonrpc=pl.String,
        id=pl.String,
        method=pl.String,
        params=struct(sessionId=pl.String, update=update),
        result=struct(sessionId=pl.String),
        error=struct(code=pl.Int64, data=struct(sessionId=pl.String)),
    )
    return {"seq": pl.Int64, "t_ns": pl.Int64, "src": pl.String, "msg": msg}


def fields_floor(path: str) -> list[tuple[Any, ...]]:
    """Parse each line and keep the fields the analyzer needs: the per-line Python floor."""
    import orjson

    rows: list[tuple[Any, ...]] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            rec = orjson.loads(line)
            msg = rec.get("msg")
            if type(msg) is not dict:
                rows.append((number, rec.get("seq"), rec.get("t_ns"), rec.get("src")))
                continue
            params = msg.get("params")
            params = params if type(params) is dict else {}
            update = params.get("update")
            update = update if type(update) is dict else {}
            rows.append(
                (
                    number,
                    rec.get("seq"),
                    rec.get("t_ns"),
                    rec.get("src"),
                    msg.get("method"),
                    msg.get("id"),
                    params.get("sessionId"),
                    update.get("sessionUpdate"),
                    line,
                )
            )
    return rows


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


def _generator_stamp() -> float:
    return (HERE / "gen_trace.py").stat().st_mtime


def _run(argv: list[str]) -> str:
    import subprocess

    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------- the parent side


def measure(
    specs: dict[str, tuple[str, str]], reps: int, baseline: Path | None
) -> dict[str, list[ChildRun]]:
    """Run every (variant, path) spec `reps` times, rounds interleaved; runs by spec label.
    The `baseline` variant is `analyze` with acp_trace imported from another source tree."""
    runs: dict[str, list[ChildRun]] = {label: [] for label in specs}
    for rep, label in rounds(list(specs), reps):
        variant, path = specs[label]
        env = {"PYTHONPATH": str(baseline)} if variant == "baseline" and baseline else None
        child_variant = "analyze" if variant == "baseline" else variant
        argv = [python(), str(Path(__file__).resolve()), "--child", child_variant, path]
        run = run_child(argv, env)
        runs[label].append(run)
        print(
            f"  round {rep + 1}: {label:<16} {run.out['seconds']:8.3f} s  peak {run.maxrss_mb:7.0f} MB",
            flush=True,
        )
    return runs


def secs(runs: list[ChildRun]) -> float:
    return median([r.out["seconds"] for r in runs])


def peak(runs: list[ChildRun]) -> float:
    return max(r.maxrss_mb for r in runs)


def size_figures(tag: str, runs: dict[str, list[ChildRun]], data: dict[str, Any]) -> list[Figure]:
    """End to end against parse-only and plain, and peak memory, at one size."""
    e2e = secs(runs[f"analyze@{tag}"])
    ndjson, orj = secs(runs[f"ndjson@{tag}"]), secs(runs[f"orjson@{tag}"])
    parse = min(ndjson, orj)
    plain = secs(runs[f"plain@{tag}"])
    floor = secs(runs[f"fields@{tag}"])
    native = secs(runs[f"ndjson-fields@{tag}"])
    mb = data["bytes"] / 1e6
    mem = peak(runs[f"analyze@{tag}"]) * 1024 * 1024 / data["bytes"]
    what = f"{mb:.3g} MB"
    return [
        Figure(f"{what}: analyze s", e2e, "-", None, " s", f"{mb / e2e:.0f} MB/s"),
        Figure(
            f"{what}: parse-only s",
            parse,
            "-",
            None,
            " s",
            f"ndjson {ndjson:.2f} s, orjson loop {orj:.2f} s",
        ),
        Figure(f"{what}: plain loop s", plain, "-", None, " s"),
        Figure(
            f"{what}: analyze / fields floor", e2e / floor, "-", None, "x", f"floor {floor:.2f} s"
        ),
        Figure(
            f"{what}: native fields / parse-only",
            native / parse,
            "-",
            None,
            "x",
            f"read_ndjson with the message fields {native:.2f} s",
        ),
        Figure(f"{what}: analyze / parse-only", e2e / parse, "<= 2", e2e / parse <= 2, "x"),
        Figure(
            f"{what}: plain / analyze",
            plain / e2e,
            ">= 5",
            plain / e2e >= 5,
            "x",
            f"bound: plain / parse-only = {plain / parse:.2f}x",
        ),
        Figure(
            f"{what}: peak RSS / file size",
            mem,
            "<= 2",
            mem <= 2,
            "x",
            f"{peak(runs[f'analyze@{tag}']):.0f} MB",
        ),
    ]


def baseline_figures(runs: dict[str, list[ChildRun]], datasets: dict[str, Any]) -> list[Figure]:
    """Per dataset, how much faster and leaner this analyzer is than the baseline's."""
    figures = []
    for tag in datasets:
        before, after = runs[f"baseline@{tag}"], runs[f"analyze@{tag}"]
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
        for label in (f"analyze@{tag}", f"plain@{tag}"):
            if label in runs and runs[label][0].out["outcomes"] != expected:
                raise SystemExit(
                    f"{label}: outcomes {runs[label][0].out['outcomes']} != {expected}"
                )
        if f"plain@{tag}" in runs:
            a, p = runs[f"analyze@{tag}"][0].out, runs[f"plain@{tag}"][0].out
            if a["history_updates"] != p["history_updates"]:
                raise SystemExit(
                    f"{tag}: history_updates differ: {a['history_updates']} != {p['history_updates']}"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=100.0, help="the base size (default 100)")
    parser.add_argument(
        "--large-mb", type=float, default=1000.0, help="the large size, 0 skips it (default 1000)"
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
    parser.add_argument("--reps", type=int, default=3, help="rounds (default 3)")
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
    if args.large_mb:
        datasets["large"] = dataset(
            args.work, f"one-{args.large_mb:g}mb-h{args.history}", args.large_mb, 1, args.history
        )
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
    for tag in ("base", "large"):
        if tag in datasets:
            for variant in ("analyze", "ndjson", "orjson", "plain", "fields", "ndjson-fields"):
                specs[f"{variant}@{tag}"] = (variant, datasets[tag]["path"])
    for tag in ("many", "one"):
        if tag in datasets:
            specs[f"analyze@{tag}"] = ("analyze", datasets[tag]["path"])
    if args.baseline:
        for tag, data in datasets.items():
            specs[f"baseline@{tag}"] = ("baseline", data["path"])
    runs = measure(specs, args.reps, args.baseline)
    check_agreement(runs, {t: d for t, d in datasets.items()})
    figures = size_figures("base", runs, datasets["base"])
    if "large" in datasets:
        figures += size_figures("large", runs, datasets["large"])
        base = secs(runs["analyze@base"]) / datasets["base"]["bytes"]
        large = secs(runs["analyze@large"]) / datasets["large"]["bytes"]
        figures.append(
            Figure("per-MB time, large / base", large / base, "<= 1.3", large / base <= 1.3, "x")
        )
    if "many" in datasets:
        many = secs(runs["analyze@many"]) / datasets["many"]["bytes"]
        one = secs(runs["analyze@one"]) / datasets["one"]["bytes"]
        note = f"{datasets['many']['files']} files: {secs(runs['analyze@many']):.2f} s, one file: {secs(runs['analyze@one']):.2f} s (per MB)"
        figures.append(
            Figure("many small files / one file", many / one, "<= 2", many / one <= 2, "x", note)
        )
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
