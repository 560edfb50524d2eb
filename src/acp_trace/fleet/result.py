"""What a fleet run gives back: the per-trace tables of every partition, concatenated."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from acp_trace.analysis.checks import SEVERITIES
from acp_trace.analysis.front import check_rule_filter
from acp_trace.analysis.latency import GROUPS, aggregate_requests
from acp_trace.errors import UsageError

UNWRITTEN = {"trace": pl.String, "problem": pl.String}
TABLES = (
    "replays",
    "findings",
    "turns",
    "requests",
    "losses",
    "traces",
    "skipped",
    "untimed",
    "sessions",
)


@dataclass
class FleetResult:
    """The tables of a fleet run, in the order a single-process analysis gives them.

    `failed` lists the files no worker could analyze (trace, problem); `partitions` how many
    partitions ran and `written` what went into a dataset (table -> rows), when one was asked;
    `unwritten` the traces analyzed but not written into it (trace, problem).
    """

    replays: pl.DataFrame
    all_findings: pl.DataFrame
    turns: pl.DataFrame
    requests: pl.DataFrame
    trace_table: pl.DataFrame
    skipped: pl.DataFrame
    untimed_table: pl.DataFrame
    failed: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={"trace": pl.String, "problem": pl.String})
    )
    partitions: int = 0
    written: dict[str, int] = field(default_factory=dict)
    losses: pl.DataFrame = field(default_factory=pl.DataFrame)  # as Analysis.losses, if asked
    unwritten: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=UNWRITTEN))

    def findings(
        self, rules: list[str] | None = None, min_severity: str = "info", *, schema: bool = True
    ) -> pl.DataFrame:
        """The findings of the selected rules at or above `min_severity` (as Analysis.findings;
        whether messages were validated was decided by `run(..., schema=)`)."""
        check_rule_filter(rules, min_severity)
        allowed = list(SEVERITIES[: SEVERITIES.index(min_severity) + 1])
        out = self.all_findings.filter(pl.col("severity").is_in(allowed))
        return out.filter(pl.col("rule").is_in(rules)) if rules else out

    def untimed(self) -> list[str]:
        """The traces without timestamps (as Analysis.untimed)."""
        return self.untimed_table["trace"].to_list()

    def traces(self) -> pl.DataFrame:
        """Per trace: records and malformed lines (as Analysis.traces)."""
        return self.trace_table

    def latency(self, by: str = "method") -> pl.DataFrame:
        """Request latency per method, agent or trace (as Analysis.latency)."""
        if by not in GROUPS:
            raise UsageError(f"--by {by}: expected one of {', '.join(GROUPS)}")
        return aggregate_requests(self.requests, by)


def concat(parts: list[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """The partitions' tables joined in partition order; findings sorted again as
    `run_checks` sorts them (stable: a trace lies in one partition, so ties keep their order)."""
    out = {name: pl.concat([p[name] for p in parts], how="vertical") for name in TABLES}
    if out["findings"].width:  # not computed (`tables`): no columns to sort by
        out["findings"] = out["findings"].sort(
            ["trace", "seq", "rule"], nulls_last=True, maintain_order=True
        )
    return out
