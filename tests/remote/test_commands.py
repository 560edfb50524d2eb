"""Traces the remote recorder wrote between the official SDKs (tests/data/remote: recorded by
tests/peers/remote_run.py; the TypeScript SDK's replay on the session stream, the Python
SDK's on the connection stream, a stream the TypeScript server cut mid-replay) go through the
commands, the report and the MCP server's reading as stdio traces do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from remotelib import env

import acp_trace
from acp_trace.mcpserver import answers
from acp_trace.mcpserver.paging import Page
from acp_trace.mcpserver.store import Store
from testpaths import ROOT

DATA = ROOT / "tests" / "data" / "remote"
WHOLE = [DATA / "ts-http.jsonl", DATA / "py-http.jsonl"]
CUT = DATA / "ts-http-cut.jsonl"


def _acp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "acp_trace", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env(), cwd=cwd)


def test_replays_and_outcomes() -> None:
    """Each whole run's resume is complete with its gap from the marker; the cut one truncated."""
    table = acp_trace.replays([*WHOLE, CUT])
    outcomes = dict(zip(table["agent"].to_list(), table["outcome"].to_list(), strict=False))
    assert sorted(table["outcome"].to_list()) == ["complete", "complete", "truncated"]
    assert set(outcomes) == {"remote-ts-agent", "remote-py-agent"}
    assert table.filter(table["outcome"] == "complete")["gap_source"].to_list() == ["marker"] * 2


def test_check_summary_and_report(tmp_path: Path) -> None:
    """`check` exits 1 on the cut trace only and names the remote rule; `summary` reads a
    remote trace as complete (no `no exit`); `report` writes its bundle."""
    assert _acp("check", *map(str, WHOLE), cwd=tmp_path).returncode == 0
    cut = _acp("check", str(CUT), cwd=tmp_path)
    assert cut.returncode == 1 and "remote-stream-closed-owing" in cut.stdout
    summary = _acp("summary", *map(str, WHOLE), cwd=tmp_path)
    assert summary.returncode == 0 and "no exit" not in summary.stdout, summary.stdout
    report = _acp(
        "report", str(CUT), *map(str, WHOLE), "-o", str(tmp_path / "report"), cwd=tmp_path
    )
    assert report.returncode in (0, 1), report.stderr
    assert "remote-stream-closed-owing" in (tmp_path / "report" / "report.md").read_text()


def test_the_mcp_server_reads_remote_traces(tmp_path: Path) -> None:
    """The MCP server's store lists the remote traces with their replays and findings."""
    for path in [*WHOLE, CUT]:
        shutil.copy(path, tmp_path)
    loaded = Store([str(tmp_path)]).load()
    page = orjson.loads(
        answers.list_traces(loaded, Page("list_traces", {}, None, 10), None, None, None)
    )
    assert sorted(r["trace"] for r in page["rows"]) == [
        "py-http.jsonl",
        "ts-http-cut.jsonl",
        "ts-http.jsonl",
    ]
    found = answers.findings(
        loaded,
        Page("findings", {}, None, 50),
        rule=None,
        min_severity="info",
        side=None,
        trace=None,
        session=None,
    )
    assert "remote-stream-closed-owing" in found


def test_watch_follows_remote_traces(tmp_path: Path) -> None:
    """`watch --format jsonl --once` tells a remote trace's replay, its outcome and the remote
    rule's finding as it does a stdio trace's."""
    done = _acp("watch", "--format", "jsonl", "--once", str(WHOLE[0]), str(CUT), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [orjson.loads(line) for line in done.stdout.splitlines()]
    outcomes = [e["outcome"] for e in events if e["event"] == "response"]
    assert outcomes == ["complete", "truncated"]
    rules = [e["rule"] for e in events if e["event"] == "finding"]
    assert "remote-stream-closed-owing" in rules
