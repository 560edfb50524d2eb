"""`acp-trace demo`: recording the demo client and agent through the tap, then the analysis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from acp_trace import analyze, replays
from acp_trace.demo import run as demo


def test_run_demo_records_each_scenario_through_the_tap(tmp_path: Path) -> None:
    """Each scenario becomes one trace with a prompt turn and a replay of that session."""
    scenarios = (
        demo.Scenario("ok", "a correct v2 replay", agent=("--turns", "4")),
        demo.Scenario("v1", "a v1 load", 1, agent=("--turns", "2")),
    )
    traces = demo.run_demo(tmp_path / "out", scenarios)
    assert [t.name for t in traces] == ["demo-ok.jsonl", "demo-v1.jsonl"]
    table = replays(traces)
    assert table["outcome"].to_list() == ["complete", "v1_loaded"]
    # the fabricated turns and the prompt's turn (session/new, a prompt, then the replay)
    assert table["history_updates"].to_list() == [10, 6]
    assert analyze(traces).turns["end_ms"].null_count() == 0
    assert analyze(traces).turns.height == 2


def test_summary_names_outcomes_and_findings(tmp_path: Path) -> None:
    """The stand-in summary lists every replay row and every finding's rule."""
    scenarios = (demo.Scenario("bad", "no marker", agent=("--fault", "marker-missing")),)
    text = demo.summary_text(demo.run_demo(tmp_path, scenarios))
    assert "demo-bad.jsonl" in text and "unmarked" in text
    assert "marker-missing" in text


def test_cli_demo_keeps_traces_in_the_given_folder(tmp_path: Path) -> None:
    """`acp-trace demo -o DIR` says each step on stderr as it goes, leaves one trace per
    scenario, prints the analysis and writes the report."""
    cmd = [sys.executable, "-m", "acp_trace", "demo", "-o", str(tmp_path)]
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(cmd, capture_output=True, timeout=120, check=False, text=True, env=env)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in tmp_path.glob("demo-*.jsonl"))
    assert names == sorted(f"demo-{s.name}.jsonl" for s in demo.SCENARIOS)
    assert "load-updates-after-response" in done.stdout
    assert (tmp_path / "report" / "report.html").exists()
    assert f"Report: {tmp_path / 'report' / 'report.html'}" in done.stdout
    progress = done.stderr.splitlines()
    assert progress == [
        *(f"demo: recording {s.name}: {s.says}" for s in demo.SCENARIOS),
        f"demo: recorded {len(demo.SCENARIOS)} traces in {tmp_path}",
        f"demo: analyzing {len(demo.SCENARIOS)} traces",
        f"demo: writing the report into {tmp_path / 'report'}",
    ]
