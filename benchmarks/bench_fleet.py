"""Fleet throughput: the same analysis of 10,000 small traces on 1 and 2 local workers (the
process pool) and on a Dask LocalCluster of 1 and 2 workers, beside the single-process
`analyze` (docs/performance.md, "Fleet").

    .venv/bin/python benchmarks/bench_fleet.py --files 10000 --mb 50 --out /tmp/acp-fleet

Each variant runs in a child process, rounds interleaved; the figures are medians and the
speed-ups are ratios measured in the same run. What stays serial: finding the files, the
partitioning, and on the client the concatenation of the partitions' tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import HERE, Figure, machine, median, python, report, rounds, run_child

VARIANTS = ("single", "pool-1", "pool-2", "dask-1", "dask-2")


def child(variant: str, folder: str) -> dict[str, Any]:
    """Run one variant in this process; what it timed, as JSON-ready numbers."""
    import acp_trace
    from acp_trace import fleet

    start = time.perf_counter()
    if variant == "single":
        a = acp_trace.analyze(folder)
        rows = a.replays.height + a.findings().height
        return {"seconds": time.perf_counter() - start, "rows": rows}
    workers = int(variant.split("-")[1])
    if variant.startswith("pool"):
        result = fleet.run(folder, workers=workers)
    else:
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            ready = time.perf_counter()
            result = fleet.run(folder, client=client)
            start = ready  # the cluster's start is not the analysis
    rows = result.replays.height + result.findings().height
    return {"seconds": time.perf_counter() - start, "rows": rows, "partitions": result.partitions}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000, help="traces (default 10,000)")
    parser.add_argument("--mb", type=float, default=50.0, help="their total size (default 50 MB)")
    parser.add_argument("--out", type=Path, help="where to generate (not the repo); required")
    parser.add_argument("--reps", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if args.out is None:
        parser.error("--out is required")
    folder = args.out / f"fleet-{args.files}"
    if not folder.is_dir():
        subprocess.run(
            [python(), str(HERE / "gen_trace.py"), "--mb", str(args.mb), "--files", str(args.files),
             "--history", "40", "--out", str(folder)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    rows: dict[str, int] = {}
    for _round, variant in rounds(VARIANTS, args.reps):
        run = run_child([python(), __file__, "--child", variant, str(folder)])
        seconds[variant].append(run.out["seconds"])
        rows[variant] = run.out["rows"]
    if len(set(rows.values())) != 1:
        raise SystemExit(f"variants disagree on the row counts: {rows}")
    med = {v: median(s) for v, s in seconds.items()}
    figures = [Figure(f"{v} (s)", med[v], "", None, "s") for v in VARIANTS]
    figures += [
        Figure("pool: 2 workers vs 1", med["pool-1"] / med["pool-2"], ">= 1.7 ideal", None, "x"),
        Figure("dask: 2 workers vs 1", med["dask-1"] / med["dask-2"], ">= 1.7 ideal", None, "x"),
        Figure("pool-2 vs single process", med["single"] / med["pool-2"], "", None, "x"),
    ]
    report(f"fleet: {args.files} traces", figures, {"machine": machine(), "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
