"""bench_watch.py runs end to end at tiny sizes and reports every figure (never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, args: list[str]) -> None:
    """Run a benchmark script; it must exit 0 (its stderr's end in the failure)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_watch_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    args = ["--replays", "2", "--per-replay", "200", "--rate", "2000", "--quiet-seconds", "1.5"]
    args += ["--tap-replays", "2", "--throughput", "2000", "--json", str(out)]
    _run("bench_watch.py", args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    for variant, seen in (("tail", "in file"), ("jsonl", "event"), ("screen", "painted")):
        assert f"{variant}: stamp -> {seen}, median" in names
        assert f"tap at full speed with {variant} / without" in names
    for variant in ("jsonl", "screen"):
        assert f"{variant}: CPU s per 10,000 updates" in names
    assert "jsonl: response -> outcome decided, median" in names
    assert "engine alone: CPU s per 10,000 updates" in names
    assert "quiet traffic: stamp -> in the file, max" in names


def test_watch_scaling_benchmark_runs(tmp_path: Path) -> None:
    """bench_watch_scaling.py at a tiny size: every tenth reported, the analyzer ran (its
    figures are never asserted)."""
    out = tmp_path / "scaling.json"
    args = ["--replays", "40", "--per", "300", "--rate", "2000", "--json", str(out)]
    _run("bench_watch_scaling.py", args)
    tenths = json.loads(out.read_text())["tenths"]
    assert [t["tenth"] for t in tenths] == list(range(1, 11))
    # how often the analyzer runs depends on how long its runs take (its budget): only that
    # it ran; the rows it keeps are asserted without time in test_fold.py
    assert sum(t["runs"] for t in tenths) >= 1
    assert all(t["core_share"] >= 0 and t["rss_mb"] > 0 for t in tenths)


def test_watch_screen_scaling_benchmark_runs(tmp_path: Path) -> None:
    """bench_watch_screen_scaling.py at a tiny size: the screen stepped through the trace,
    every tenth reported with what the screen holds (its figures are never asserted)."""
    out = tmp_path / "screen.json"
    args = ["--replays", "4", "--per", "200", "--rate", "2000", "--size", "80x24"]
    _run("bench_watch_screen_scaling.py", [*args, "--json", str(out)])
    tenths = json.loads(out.read_text())["tenths"]
    assert tenths and all(t["ticks"] >= 1 and t["timeline_rows"] >= 0 for t in tenths)
    assert tenths[-1]["replays_held"] == 4
