"""The benchmark scripts run end to end at tiny sizes (figures are printed, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_analyzer_benchmark_runs(tmp_path: Path) -> None:
    """bench_analyzer.py generates its traces, runs every variant and reports every figure."""
    out = tmp_path / "figures.json"
    args = ["--mb", "0.2", "--large-mb", "0.4", "--huge-mb", "0", "--files", "4"]
    args += ["--history", "60"]
    args += ["--files-history", "5", "--reps", "1", "--large-reps", "1"]
    args += ["--work", str(tmp_path), "--json", str(out)]
    stdout = run("bench_analyzer.py", *args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "== analyzer" in stdout
    assert any("cli replays / orjson loop" in n for n in names)
    assert any("analyze 1 core / 2 cores" in n for n in names)
    assert any(n.startswith("per-MB time") for n in names)
    assert "many small files / one file" in names
    assert "cli rules: own time ms" in names
    assert any("the floor (read_floor.py)" in n for n in names)
    assert any(n.startswith("many small files: cli check --workers 1") for n in names)


def test_tap_benchmark_runs(tmp_path: Path) -> None:
    """bench_tap.py measures latency, throughput, start-up, timestamps and the stall through a
    real tap, against relay.py and the cat pipeline."""
    out = tmp_path / "figures.json"
    args = ["all", "--sizes", "200", "--count", "30", "--mb", "0.5", "--line-sizes", "4096"]
    args += ["--reps", "1", "--startup-reps", "1", "--timed", "30", "--interval-us", "300"]
    args += ["--stall-mb", "1", "--json", str(out)]
    stdout = run("bench_tap.py", *args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "== tap" in stdout
    assert "200 B: added RTT, tap / relay.py" in names
    assert "4 KiB lines: burst, tap / relay.py" in names
    assert "start-up: added to the first answer, tap - relay.py" in names
    assert any(n.startswith("timestamp skew p99") for n in names)
    assert "1 MiB line: added worst delay the other way" in names


def test_replay_benchmark_runs(tmp_path: Path) -> None:
    """bench_replay.py builds a real-shaped history, replays it through every variant and
    checks that the tap's trace holds every line."""
    out = tmp_path / "figures.json"
    stdout = run("bench_replay.py", "--mb", "0.5", "--reps", "1", "--json", str(out))
    figures = {f["name"]: f for f in json.loads(out.read_text())["figures"]}
    assert "== replay" in stdout
    assert any(n.endswith(" MB replay: answered, tap / relay.py") for n in figures)
    complete = figures["trace complete: every history line recorded, none dropped"]
    assert complete["met"] is True, complete


def test_fresh_memory_benchmark_runs() -> None:
    """fresh_memory.py writes each kind of memory twice and prints a line per kind."""
    stdout = run("fresh_memory.py", "--mib", "4", "--rounds", "1")
    for kind in ("shared mapping", "private mapping", "memfd", "file on disk"):
        assert kind in stdout and "fresh / again" in stdout


def test_pingpong_client_and_plain_replays_run_alone(tmp_path: Path) -> None:
    """The client and the plain loop are usable as scripts on their own."""
    agent = [sys.executable, str(BENCH / "echo_agent.py")]
    rtts = json.loads(run("pingpong_client.py", "--size", "300", "--count", "5", "--", *agent))
    assert rtts["size"] == 300 and len(rtts["rtt_ns"]) == 5
    run("gen_trace.py", "--mb", "0.05", "--history", "20", "--out", str(tmp_path))
    rows = [json.loads(line) for line in run("plain_replays.py", str(tmp_path)).splitlines()]
    assert rows and all(r["outcome"] for r in rows)


def test_fleet_benchmark_runs(tmp_path: Path) -> None:
    """bench_fleet.py generates small traces and times every variant (same rows in each)."""
    out = tmp_path / "figures.json"
    args = [
        "--files",
        "20",
        "--mb",
        "0.2",
        "--reps",
        "1",
        "--out",
        str(tmp_path),
        "--json",
        str(out),
    ]
    stdout = run("bench_fleet.py", *args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "== fleet: 20 traces" in stdout
    assert "pool: 2 workers vs 1" in names and "dask: 2 workers vs 1" in names


def test_schema_benchmark_runs(tmp_path: Path) -> None:
    """bench_schema.py compares the three validators and measures the validation budget."""
    out = tmp_path / "figures.json"
    args = ["all", "--mb", "0.05", "--messages", "200", "--reps", "1", "--json", str(out)]
    stdout = run("bench_schema.py", *args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "== schema validation" in stdout
    assert "fastjsonschema / jsonschema-rs, validation time" in names
    assert "check with / without validation" in names


def test_fidelity_benchmark_runs(tmp_path: Path) -> None:
    """bench_fidelity.py generates a trace whose sessions are resumed twice and prints the
    fidelity pass's time and its ratios to a baseline tree (here the same tree)."""
    out = tmp_path / "figures.json"
    src = str(BENCH.parent / "src")
    args = ["--mb", "0.3", "--mb2", "0.6", "--reps", "1", "--baseline", src, "--json", str(out)]
    run("bench_fidelity.py", *args)
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "0.3 MB: replays / baseline" in names and "0.6 MB: check / baseline" in names
    assert "fidelity pass: large / small" in names


def test_remote_benchmark_runs(tmp_path: Path) -> None:
    """bench_remote.py measures the proxy's added round trip and its SSE and WebSocket
    throughput against a direct connection."""
    out = tmp_path / "figures.json"
    stdout = run(
        "bench_remote.py", "--count", "5", "--mb", "0.05", "--reps", "1", "--json", str(out)
    )
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert "== remote recorder" in stdout
    assert "1024 B: added per round trip (2 messages)" in names
    assert "1024 B: SSE MB/s, proxy / direct" in names


def test_weight_benchmark_runs(tmp_path: Path) -> None:
    """bench_weight.py generates a small codex-like trace, runs replays, check and report on
    it in this tree and a baseline (here the same tree), and prints each ratio and the weight
    pass alone."""
    out = tmp_path / "figures.json"
    src = str(BENCH.parent / "src")
    args = ["--mb", "0.3", "--reps", "1", "--small-reps", "1", "--baseline", src]
    run("bench_weight.py", *args, "--work", str(tmp_path), "--json", str(out))
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    for command in ("replays", "check", "report"):
        assert f"codex-like 0.3 MB: {command} time / baseline" in names
        assert f"codex-like 0.3 MB: {command} memory / baseline" in names
    assert "codex-like 0.3 MB: weight pass alone" in names
    assert (tmp_path / "codex-like" / "codex-like.jsonl").is_file()
