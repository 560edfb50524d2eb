"""A recording that lacks lines is named wherever findings are read (issue 26): `check` in
text, JSON and JUnit (with --workers too), and the report; a complete one is not."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli
from tracebuilder import TraceBuilder


def lossy(path: Path) -> Path:
    """A replay whose recording dropped 7 agent lines and ends without an `exit` event."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1")
    b.history("s1", 2)
    b.raw("tap", {"event": "dropped", "count": 7, "stream": "agent"})
    b.history("s1", 1)
    b.response(rid, {}, dt=50)
    return b.write(path)


def complete(path: Path) -> Path:
    b = TraceBuilder(agent="agent-y", version="1.0")
    rid = b.resume("s2")
    b.history("s2", 2)
    b.response(rid, {}, dt=50)
    b.raw("tap", {"event": "exit", "code": 0, "signal": None})
    return b.write(path)


def test_check_text_names_the_loss(cli: Cli, tmp_path: Path) -> None:
    lossy(tmp_path / "lossy.jsonl")
    complete(tmp_path / "whole.jsonl")
    result = cli("check", "lossy.jsonl", "whole.jsonl", width=None)
    assert "1 trace lacks part of the recording" in result.out, result.out
    line = next(x for x in result.out.splitlines() if x.startswith("  lossy.jsonl:"))
    assert "7 dropped by the tap" in line and "no `exit` event" in line
    assert "whole.jsonl:" not in result.out


def test_check_json_and_junit_name_the_loss(cli: Cli, tmp_path: Path) -> None:
    lossy(tmp_path / "lossy.jsonl")
    complete(tmp_path / "whole.jsonl")
    doc = json.loads(cli("check", "-f", "json", "lossy.jsonl", "whole.jsonl").out)
    (row,) = doc["recording_losses"]
    assert row["trace"] == "lossy.jsonl" and row["dropped"] == 7 and row["ended"] == "no exit"
    junit = cli("check", "-f", "junit", "lossy.jsonl", "whole.jsonl").out
    assert junit.count("<system-err>") == 1
    assert "the recording lacks lines: lost records: 7 dropped by the tap" in junit


def test_check_with_workers_names_the_loss(cli: Cli, tmp_path: Path) -> None:
    lossy(tmp_path / "lossy.jsonl")
    complete(tmp_path / "whole.jsonl")
    result = cli("check", "--workers", "2", "lossy.jsonl", "whole.jsonl", width=None)
    assert "1 trace lacks part of the recording" in result.out, result.err


def test_report_names_the_loss(cli: Cli, tmp_path: Path) -> None:
    lossy(tmp_path / "lossy.jsonl")
    complete(tmp_path / "whole.jsonl")
    assert cli("report", "lossy.jsonl", "whole.jsonl", "-o", "out").code == 0
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Recordings that lack lines" in md
    assert "- lossy.jsonl: lost records: 7 dropped by the tap" in md
    assert "whole.jsonl:" not in md.split("## Recordings that lack lines")[1].split("##")[0]


def test_a_complete_recording_is_no_loss(cli: Cli, tmp_path: Path) -> None:
    complete(tmp_path / "whole.jsonl")
    assert "lacks part" not in cli("check", "whole.jsonl").out
    assert cli("check", "-f", "json", "whole.jsonl").out.count('"recording_losses": []') == 1
