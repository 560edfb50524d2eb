"""The report keeps the README's promises: no stderr text of the agent in any of its files, and
a command line that names no absolute path but under `~`."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from acp_trace.render.report.context import shown_command
from clirun import Cli
from tracebuilder import TraceBuilder


def with_stderr(path: Path) -> Path:
    """A replay whose gap holds a stderr line with a token in it."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1")
    b.history("s1", 2)
    b.text("stderr", "auth token=sk-SECRET-0123 loading history")
    b.response(rid, {}, dt=50)
    return b.write(path)


def test_report_files_hold_no_stderr_text(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replays.csv has no last_stderr_in_gap column, and no file of the report holds the
    agent's stderr line; report.md shows the trace folder under HOME as ~."""
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    with_stderr(home / "traces" / "t.jsonl")
    monkeypatch.setenv("HOME", str(home))
    result = cli("report", str(home / "traces"), "-o", "out")
    assert result.code == 0, result.err
    out = tmp_path / "out"
    csv = pl.read_csv(out / "replays.csv")
    assert "last_stderr_in_gap" not in csv.columns and "gap_ms" in csv.columns
    for name in ("report.md", "report.html", "replays.csv"):
        assert "sk-SECRET" not in (out / name).read_text(), name
    md = (out / "report.md").read_text()
    assert "acp-trace report ~/traces -o out" in md
    assert str(tmp_path) not in md


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["report", "traces/", "-o", "out"], "report traces/ -o out"),
        (["report", "/home/me/acp-traces", "-o", "r"], "report ~/acp-traces -o r"),
        (["report", "/home/me", "-o", "r"], "report ~ -o r"),
        (["report", "/srv/team/secret/traces/", "-o", "r"], "report '…/traces/' -o r"),
        (["report", "/home/meta/x.jsonl", "-o", "r"], "report '…/x.jsonl' -o r"),
        (["report", "my traces/", "-o", "r"], "report 'my traces/' -o r"),
    ],
)
def test_shown_command_hides_absolute_paths(args: list[str], shown: str) -> None:
    """Relative arguments as typed; absolute ones under HOME as ~, others by their last part."""
    assert shown_command(args, "/home/me") == shown


def test_timeline_of_a_child_keeps_the_window_bars(cli: Cli, trace: Path) -> None:
    """timeline --session CHILD: the parent's replay window opens and closes around the
    child's lines, each of which has the window's bar."""
    out = cli("timeline", "t.jsonl", "--session", "child_1").out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "+-- replay window: session/resume" in line)
    end = next(i for i, line in enumerate(lines) if "+-- end of session/resume sess_1" in line)
    child = [line for line in lines if line.endswith("[child_1]")]
    assert start < end and child
    assert all(" | " in line for line in child)


def test_report_says_what_it_counts_with_separators(cli: Cli, trace: Path) -> None:
    """report.md counts replays (one per session, children included) and the replaying
    requests they came from; a count in a table is written like a count in the text."""
    from acp_trace.render.report.context import MARKDOWN, Context

    assert cli("report", "t.jsonl", "-o", "out").code == 0
    md = (trace.parent / "out" / "report.md").read_text()
    assert "3 replays (one per session, children included) in 2 replaying requests" in md
    ctx = Context(None, MARKDOWN, {}, pl.DataFrame())  # type: ignore[arg-type]
    assert ctx.cell(1234567) == "1,234,567" and ctx.cell(1359.5) == "1,359.5"
