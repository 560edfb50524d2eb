"""sample_traces/README.md says what each sample holds, as the analyzer finds it today: a row
per trace with its outcomes and the rules it breaks, one trace per demo-agent fault, and the
correct demo traces clean (the schema check included)."""

from __future__ import annotations

import re

import polars as pl
import pytest

import acp_trace
from acp_trace.demo.agent import FAULTS
from testpaths import SAMPLES

ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<says>.*) \| (?P<outcomes>.*) \| (?P<rules>.*) \|$")


def readme_rows() -> dict[str, dict[str, str]]:
    rows = {}
    for line in (SAMPLES / "README.md").read_text().splitlines():
        match = ROW.match(line)
        if match and match["file"].endswith(".jsonl"):
            rows[match["file"]] = match.groupdict()
    return rows


@pytest.fixture(scope="module")
def analysis() -> acp_trace.Analysis:
    return acp_trace.analyze(SAMPLES)


def test_every_sample_has_a_row_and_every_row_a_sample() -> None:
    """The table lists exactly the .jsonl files of sample_traces/."""
    assert sorted(readme_rows()) == sorted(p.name for p in SAMPLES.glob("*.jsonl"))


def test_each_row_says_the_outcomes_and_rules_the_analyzer_finds(
    analysis: acp_trace.Analysis,
) -> None:
    """Outcomes (session: outcome, in replay order) and the sorted rule ids of each trace are
    those of acp-trace replays and acp-trace check."""
    findings = analysis.findings()
    for name, row in readme_rows().items():
        trace = str(SAMPLES / name)
        replays = analysis.replays.filter(pl.col("trace") == trace)
        outcomes = ", ".join(f"{s}: {o}" for s, o in replays.select("session", "outcome").rows())
        rules = sorted(set(findings.filter(pl.col("trace") == trace)["rule"].to_list()))
        assert (row["outcomes"], row["rules"]) == (outcomes or "-", ", ".join(rules) or "-"), name


def test_one_sample_per_fault_says_what_the_fault_does() -> None:
    """Each demo-agent fault has its trace, described with the fault's own words."""
    rows = readme_rows()
    for fault, says in FAULTS.items():
        row = rows[f"demo-fault-{fault}.jsonl"]
        assert row["says"].startswith(f"fault `{fault}") and row["says"].endswith(says), fault


def test_the_correct_demo_samples_break_nothing(analysis: acp_trace.Analysis) -> None:
    """The demo agent's correct traces (v1, v2, children, cold starts, prompts) have no
    finding at all, schema-invalid included, but what a correct agent's cold start costs a
    client with a 2 s deadline: its 2.1 and 2.3 s of setup before the replay (info)."""
    correct = [p for p in SAMPLES.glob("demo-*.jsonl") if not p.name.startswith("demo-fault-")]
    assert len(correct) >= 4
    found = analysis.findings().filter(pl.col("trace").is_in([str(p) for p in correct]))
    slow = pl.col("rule") == "silence-past-client-deadline"
    assert found.filter(~slow).select("trace", "rule", "message").rows() == []
    cold = found.filter(slow)
    assert set(cold["trace"]) == {str(SAMPLES / "demo-v2-cold-start.jsonl")}
    assert all("every 2 s" in m for m in cold["message"])
