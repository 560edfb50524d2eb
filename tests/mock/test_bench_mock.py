"""benchmarks/bench_mock.py runs end to end on one sample (figures printed, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from testpaths import ROOT


def test_mock_timing_benchmark_runs(tmp_path: Path) -> None:
    """One round on one sample: every timing field gets its percentiles and its worst delta."""
    out = tmp_path / "figures.json"
    script = ROOT / "benchmarks" / "bench_mock.py"
    cmd = [sys.executable, str(script), "--reps", "1", "--json", str(out), "gemini-cli-v1-load"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    names = [f["name"] for f in data["figures"]]
    assert "response_ms |delta| p90" in names and "first_update_ms smallest delta" in names
    assert set(data["worst"]) >= {"first_update_ms", "response_ms", "last_history_to_response_ms"}
    assert "== mock timing fidelity" in done.stdout
