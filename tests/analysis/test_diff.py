"""Comparing two runs: a real gap regression is flagged, the same traces never are, few samples
are too few, outcome flips and new findings are listed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.diff import (
    INCONCLUSIVE,
    NO_CHANGE,
    REGRESSION,
    TOO_FEW,
    Diff,
    DiffOptions,
    diff,
    parse_threshold,
)
from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.demo.run import acp_trace_command
from tracebuilder import TraceBuilder


def record_demo(path: Path, resumes: int, *gap: str) -> Path:
    """Record the demo client and agent through the tap: `resumes` replaying resumes."""
    agent = acp_trace_command("demo-agent", "--session", "sess_demo", *gap)
    tap = acp_trace_command("record", "-o", str(path), "--", *agent)
    result = run_client(ClientOptions(command=tuple(tap), resumes=resumes, session="sess_demo"))
    assert result.finished, result.problem
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real recordings: the agent answers 20 ms after the marker, then about 100 ms."""
    folder = tmp_path_factory.mktemp("runs")
    return {
        "fast": record_demo(folder / "fast.jsonl", 12, "--gap", "0.02"),
        "slow": record_demo(folder / "slow.jsonl", 12, "--gap", "uniform:0.09,0.13", "--seed", "3"),
        "few": record_demo(folder / "few.jsonl", 3, "--gap", "0.12"),
    }


def _gap(d: Diff, stat: str) -> dict[str, Any]:
    rows = d.metrics.filter(pl.col("metric") == "gap", pl.col("stat") == stat).to_dicts()
    assert len(rows) == 1
    return rows[0]


def test_a_slower_gap_is_a_regression(runs: dict[str, Path]) -> None:
    """A recorded ~80 ms longer wait after the marker is flagged, p50 and p90, with an interval
    that excludes zero; the reverse direction is an improvement."""
    d = diff(runs["fast"], runs["slow"])
    for stat in ("p50", "p90"):
        row = _gap(d, stat)
        assert row["verdict"] == REGRESSION
        assert row["ci_low_ms"] > 50 and row["base_n"] == row["new_n"] == 12
    assert any(
        line.startswith("gap p50 of acp-trace-demo-agent session/resume") for line in d.regressions
    )
    assert _gap(diff(runs["slow"], runs["fast"]), "p50")["verdict"] == "improvement"


def test_the_same_traces_on_both_sides_change_nothing(runs: dict[str, Path]) -> None:
    """The false-positive trap: BASE == NEW gives no regression and a zero change."""
    d = diff(runs["slow"], runs["slow"])
    assert d.regressions == []
    assert set(d.metrics["verdict"].to_list()) <= {NO_CHANGE, TOO_FEW}
    assert _gap(d, "p90")["change_ms"] == 0


def test_few_samples_are_too_few_to_judge(runs: dict[str, Path]) -> None:
    """Three replays on a side: the verdict says so instead of flagging a +500% change."""
    d = diff(runs["fast"], runs["few"])
    row = _gap(d, "p50")
    assert row["verdict"] == TOO_FEW and row["change_pct"] > 300
    assert row["ci_low_ms"] is None and d.regressions == []


def test_a_wide_interval_is_inconclusive() -> None:
    """A big point change whose interval still holds zero is inconclusive, not a regression."""
    from acp_trace.analysis.diff import _verdict

    opts = DiffOptions()
    assert _verdict(50.0, 50.0, -5.0, 120.0, opts) == INCONCLUSIVE
    assert _verdict(50.0, 50.0, 5.0, 120.0, opts) == REGRESSION
    assert _verdict(5.0, 10.0, 1.0, 9.0, opts) == NO_CHANGE  # under 20%
    both = DiffOptions(threshold_pct=20.0, threshold_ms=100.0)
    assert _verdict(50.0, 50.0, 5.0, 120.0, both) == NO_CHANGE  # under 100 ms


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20%", (20.0, None)), ("50ms", (None, 50.0)), ("1.5s", (None, 1500.0)), ("7", (None, 7.0))],
)
def test_parse_threshold(text: str, expected: tuple[float | None, float | None]) -> None:
    """A share of BASE or a duration."""
    assert parse_threshold(text) == expected


def test_a_bad_threshold_says_what_it_must_look_like() -> None:
    """`--threshold banana` names both accepted forms."""
    with pytest.raises(ValueError, match="expected a share of BASE such as 20% or a duration"):
        parse_threshold("banana")


def _conversation(tmp_path: Path, name: str, marked: bool, extra_rule: bool) -> Path:
    b = TraceBuilder(agent="agent-x", version="2.0" if extra_rule else "1.0")
    rid = b.resume("s1")
    b.history("s1", 1)
    if marked:
        b.marker("s1")
    b.state("s1")
    b.response(rid, dt=10)
    if extra_rule:
        b.marker("s1")  # after the response: marker-late
    return b.write(tmp_path / name)


def test_outcome_flips_and_new_rules_are_regressions(tmp_path: Path) -> None:
    """The same request goes from complete to unmarked, and a new error rule appears."""
    base = _conversation(tmp_path, "base.jsonl", marked=True, extra_rule=False)
    new = _conversation(tmp_path, "new.jsonl", marked=False, extra_rule=True)
    d = diff(base, new)
    flips = d.flips.to_dicts()
    assert [(f["base_outcome"], f["new_outcome"], f["worse"]) for f in flips] == [
        ("complete", "unmarked", True)
    ]
    assert "agent-x session/resume s1 (id 2): complete -> unmarked" in d.regressions
    findings = {r["rule"]: r["change"] for r in d.findings.to_dicts()}
    assert findings["marker-late"] == "new" and findings["marker-missing"] == "new"
    assert "rule marker-late (error): 1 in NEW, none in BASE" in d.regressions
    versions = d.metrics.filter(pl.col("metric") == "gap")["new_versions"].to_list()
    assert versions == ["2.0", "2.0"]


def test_the_library_takes_analyses_too(runs: dict[str, Path]) -> None:
    """acp_trace.diff accepts Analysis objects and keeps them."""
    base, new = acp_trace.analyze(runs["fast"]), acp_trace.analyze(runs["slow"])
    d = acp_trace.diff(base, new)
    assert d.base is base and d.new is new and d.regressions
