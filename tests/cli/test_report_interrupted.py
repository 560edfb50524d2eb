"""`acp-trace report` interrupted at any point (SIGINT, SIGTERM) leaves the whole report or
nothing: no folder of charts without report.md, no unfinished folder beside it, and it says
so (exit 130 or 143)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testpaths import SAMPLES

WHOLE = {".acp-trace-outputs.json", "report.md", "report.html", "replays.csv"}
WAIT = 300.0  # seconds: generous, for a busy machine; never an assertion on time


COMMAND = [sys.executable, "-m", "acp_trace", "report", str(SAMPLES), "-o", "out"]


def start(tmp_path: Path) -> subprocess.Popen[str]:
    """`acp-trace report sample_traces -o tmp_path/out`, as a user runs it."""
    return subprocess.Popen(
        COMMAND, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for(tmp_path: Path, point: str, proc: subprocess.Popen[str]) -> bool:
    """Wait until the run reaches `point`: `started` (at once), `folder` (a folder appears
    under tmp_path, where the report is being written), `chart` (a chart is drawn in it);
    False if the run ended first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and proc.poll() is None:
        if point == "started" or (point == "folder" and any(tmp_path.iterdir())):
            return True
        if point == "chart" and any(tmp_path.glob("**/*.png")):
            return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("point", ["started", "folder", "chart"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_report_is_whole_or_absent(tmp_path: Path, point: str, signum: int) -> None:
    """Interrupted at start, once its unfinished folder appears, or once a chart is drawn:
    either `out` holds the whole report (the signal came after it was in place) or there is
    no `out` and nothing beside it, and stderr says the report was not written."""
    proc = start(tmp_path)
    reached = wait_for(tmp_path, point, proc)
    if reached:
        os.kill(proc.pid, signum)
    _out, err = proc.communicate(timeout=WAIT)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "out"]
    assert leftovers == [], leftovers
    out = tmp_path / "out"
    if out.exists():  # finished before the signal was taken
        assert {p.name for p in out.iterdir()} >= WHOLE and (out / "gap.png").exists()
        assert proc.returncode in (0, 128 + signum), err
    elif point == "started":  # perhaps before Python took the signal: its default action
        assert reached and proc.returncode in (128 + signum, -signum), err
    else:
        assert reached and proc.returncode == 128 + signum, err
        assert "Traceback" not in err and "interrupted by" in err
        assert "out: the report was not written" in err


def test_an_interrupted_rerun_keeps_the_old_report(tmp_path: Path) -> None:
    """SIGTERM while a report is rewritten into its folder: the earlier report stays whole."""
    assert subprocess.run(COMMAND, cwd=tmp_path, capture_output=True).returncode == 0
    before = (tmp_path / "out" / "report.md").read_bytes()
    proc = start(tmp_path)
    if wait_for(tmp_path, "chart", proc):
        proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=WAIT)
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert names >= WHOLE and (tmp_path / "out" / "report.md").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
