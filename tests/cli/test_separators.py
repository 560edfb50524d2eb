"""Thousands separators everywhere a person reads and nowhere a program does: every text table,
summary, timeline, finding, diff line, the report and the charts write `12,400.0` and `1,200`;
JSON, CSV and JUnit keep `12400.0` and `1200`; positions (seq) stay as the messages write them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from matplotlib.text import Text

from clirun import Cli
from tracebuilder import TraceBuilder

UPDATES = 1200  # history updates in the replay: 600 turns


def big(path: Path, gap: float = 12_000.0) -> Path:
    """A v2 resume of 1,200 history updates answered `gap` ms after the last one, no marker:
    response 1,200 + `gap` ms after the request (marker-missing names the 1,200 updates)."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1")
    b.history("s1", UPDATES // 2)
    b.response(rid, {}, dt=gap)
    b.event("exit", code=0, signal=None)
    return b.write(path)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return big(tmp_path / "t.jsonl")


@pytest.mark.parametrize("width", [80, None])
def test_text_tables_separate_thousands(cli: Cli, trace: Path, width: int | None) -> None:
    """replays, latency and summary at a terminal and in a pipe: 13,200.0 ms and 1,200."""
    replays = cli("replays", "t.jsonl", width=width).out
    assert "1,200" in replays and "13,200.0" in replays and "12,000.0" in replays
    latency = cli("latency", "t.jsonl", width=width).out
    assert "13,200.0" in latency
    summary = cli("summary", "t.jsonl", width=width).out
    assert "1,204 messages" in summary and "13,202.0 ms" in summary
    assert "session/update 1,200" in summary
    for text in (replays, latency, summary):
        assert "13200" not in text and "1200 " not in text


def test_timeline_times_and_check_messages(cli: Cli, trace: Path) -> None:
    """The timeline's times and check's sentences separate thousands; a seq stays plain."""
    timeline = cli("timeline", "t.jsonl", "--replays-only").out
    assert "\n13,203.000  | <- 1204  response" in timeline and "+13,200.0 ms" in timeline
    check = cli("check", "t.jsonl").out
    assert "(1,200 history updates)" in check and "at seq 1204" in check


def test_machine_formats_keep_raw_numbers(cli: Cli, trace: Path, tmp_path: Path) -> None:
    """JSON and CSV of replays and latency hold plain numbers: 13200.0, 1200."""
    rows = json.loads(cli("replays", "t.jsonl", "--format", "json").out)
    assert rows[0]["response_ms"] == 13200.0 and rows[0]["history_updates"] == UPDATES
    csv = cli("replays", "t.jsonl", "--format", "csv").out
    assert "13200.0" in csv and "1,2" not in csv
    latency = cli("latency", "t.jsonl", "--format", "csv", "--table", "requests").out
    assert "13200.0" in latency and "13,2" not in latency
    junit = cli("check", "t.jsonl", "--format", "junit").out
    assert 'tests="' in junit  # attribute values are plain numbers
    assert all("," not in v for v in _attributes(junit, ("tests", "failures", "errors")))
    (tmp_path / "t2.jsonl").write_bytes(trace.read_bytes())
    assert cli("export", "t.jsonl", "--format", "csv", "-o", "out/").code == 0
    exported = pl.read_csv(tmp_path / "out" / "replays.csv")
    assert exported["response_ms"].to_list() == [13200.0]


def _attributes(xml: str, names: tuple[str, ...]) -> list[str]:
    import re

    return [m.group(2) for m in re.finditer(r"\b(" + "|".join(names) + r')="([^"]*)"', xml)]


def test_diff_text_and_markdown(cli: Cli, tmp_path: Path) -> None:
    """diff's table and its regression sentence: 12,000.0 -> 24,000.0 ms."""
    for side, gap in (("base", 12_000.0), ("new", 24_000.0)):
        (tmp_path / side).mkdir()
        for i in range(6):
            big(tmp_path / side / f"t{i}.jsonl", gap + i)
    out = cli("diff", "base", "--", "new").out
    assert "12,002.5 -> 24,002.5 ms" in out
    assert "12,002.5" in out.split("replay gap and request latency")[1]
    md = cli("diff", "--format", "markdown", "base", "--", "new").out
    assert "12,002.5" in md
    raw = json.loads(cli("diff", "--format", "json", "base", "--", "new").out)
    assert 12002.5 in [m["base_ms"] for m in raw["metrics"]]


def test_report_and_charts(cli: Cli, trace: Path, tmp_path: Path) -> None:
    """report.md, report.html and the charts write 13,200 ms; replays.csv keeps 13200.0."""
    from acp_trace import analyze, plots

    assert cli("report", "t.jsonl", "-o", "out").code == 0
    out = tmp_path / "out"
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    for text in (md, html):
        assert "13,200" in text and "1,200" in text and "13200" not in text
    assert "13200.0" in (out / "replays.csv").read_text()
    a = analyze(trace)
    for fig in (plots.gap(a), plots.replay(a), plots.latency(a)):
        shown = " ".join(t.get_text() for t in fig.findobj(Text))
        assert "12,000 ms" in shown or "13,200 ms" in shown, shown
        assert "13200" not in shown and "12000" not in shown


def test_export_dataset_counts_have_separators(cli: Cli, trace: Path, tmp_path: Path) -> None:
    """export --dataset says what it appended as a person reads it: `1,203 records`."""
    out = cli("export", "--format", "parquet", "--dataset", str(tmp_path / "ds"), "t.jsonl").out
    records = pl.read_parquet(tmp_path / "ds" / "records" / "**" / "*.parquet")
    assert out.startswith(f"{tmp_path / 'ds'}: 1 new traces (0 already in the dataset): ")
    assert f" {records.height:,} records" in out and "1,2" in out, out
