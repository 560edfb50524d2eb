"""The Parquet dataset at 10,000 traces (docs/dataset.md, "Cost"): export, files, reading in
DuckDB and polars, a re-export that adds nothing, `compact`, and reading after it; beside the
previous tree's part files and manifest (`--previous SRC`: that tree's `src/`).

    .venv/bin/python benchmarks/bench_dataset.py --files 10000 --out /tmp/acp-dataset \\
        --previous /path/to/previous/src

Each step runs in a child process (a fresh interpreter, as a user's command would); times are
wall-clock seconds of one run (each step changes the folder, so it is not repeated), reads
are medians of `--reps` runs. The traces are tests/fleet/fleetgen's, each a recording of its
own (distinct headers), three agents over about 260 days.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import HERE, machine, median

ROOT = HERE.parent
READ = {
    "duckdb": (
        "import duckdb, sys; d = sys.argv[1]; "
        "print(duckdb.sql(f\"select count(*), count(distinct trace_id) from read_parquet('{d}/records/**/*.parquet')\").fetchall()); "
        "print(duckdb.sql(f\"select agent, quantile_cont(gap_ms, 0.9) from read_parquet('{d}/replays/**/*.parquet') group by all\").fetchall())"
    ),
    "polars": (
        "import polars as pl, sys; d = sys.argv[1]; "
        "r = pl.scan_parquet(f'{d}/records/**/*.parquet', hive_partitioning=True).select(pl.len(), pl.col('trace_id').n_unique()).collect(); print(r.rows()); "
        "print(pl.scan_parquet(f'{d}/replays/**/*.parquet', hive_partitioning=True).group_by('agent').agg(pl.col('gap_ms').quantile(0.9)).collect().rows())"
    ),
}  # fmt: skip


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr}")
    return seconds, done.stdout.strip()


def files(dataset: Path) -> int:
    return sum(1 for p in dataset.rglob("*") if p.is_file())


def measure(label: str, dataset: Path, folder: Path, src: Path, reps: int) -> dict[str, Any]:
    env = os.environ | {"PYTHONPATH": str(src)}
    cli = [sys.executable, "-m", "acp_trace"]
    export = [*cli, "export", "--format", "parquet", "--dataset", str(dataset), str(folder)]
    out: dict[str, Any] = {"variant": label}
    out["export_s"], out["export_out"] = timed(export, env)
    out["files"] = files(dataset)
    out["parquet_files"] = sum(1 for _ in dataset.rglob("*.parquet"))
    for reader, code in READ.items():
        runs = [timed([sys.executable, "-c", code, str(dataset)])[0] for _ in range(reps)]
        out[f"{reader}_read_s"] = median(runs)
    out["reexport_s"], out["reexport_out"] = timed(export, env)
    out["files_after_reexport"] = files(dataset)
    out["rows"] = timed([sys.executable, "-c", READ["duckdb"], str(dataset)])[1].splitlines()[0]
    if label == "this tree":
        out["compact_s"], out["compact_out"] = timed([*cli, "compact", str(dataset)], env)
        out["files_after_compact"] = files(dataset)
        out["parquet_files_after_compact"] = sum(1 for _ in dataset.rglob("*.parquet"))
        for reader, code in READ.items():
            runs = [timed([sys.executable, "-c", code, str(dataset)])[0] for _ in range(reps)]
            out[f"{reader}_read_after_compact_s"] = median(runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/acp-dataset"))
    parser.add_argument("--previous", type=Path, help="the previous tree's src/ folder")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=("this", "previous"), help="run one variant")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fleet")]
    from fleetgen import write_traces

    folder = args.out / "traces"
    if not folder.is_dir():
        write_traces(folder, args.files, distinct=True)
    results = []
    variants = [("this tree", ROOT / "src")]
    if args.previous:
        variants.insert(0, ("previous tree", args.previous))
    for label, src in variants:
        if args.only and not label.startswith(args.only):
            continue
        dataset = args.out / f"ds-{label.split()[0]}"
        shutil.rmtree(dataset, ignore_errors=True)
        results.append(measure(label, dataset, folder, src, args.reps))
    print(json.dumps({"machine": machine(), "traces": args.files, "results": results}, indent=1))


if __name__ == "__main__":
    main()
