"""The rule registry: findings, the context every check reads, and running the checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import polars as pl

from acp_trace.analysis.checks.catalogue import ENTRIES, SEVERITIES, SIDES, Entry
from acp_trace.analysis.latency import TurnFacts
from acp_trace.analysis.replay_fidelity import replay_fidelity
from acp_trace.analysis.replay_weight import replay_weights
from acp_trace.analysis.replays import Facts, Window
from acp_trace.analysis.schema import SchemaFacts, validate_timeline
from acp_trace.fidelity import ReplayFidelity
from acp_trace.jsonrpc import json_text
from acp_trace.weight import DEFAULT, ReplayWeight, WeightOptions
from acp_trace.weight.lines import line_rows

__all__ = ["SEVERITIES", "SIDES"]  # defined in the catalogue, named here too

FINDING_SCHEMA: dict[str, Any] = {
    "rule": pl.String,
    "severity": pl.String,
    "side": pl.String,
    "trace": pl.String,
    "session": pl.String,
    "seq": pl.Int64,
    "t_ms": pl.Float64,
    "message": pl.String,
}


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place."""

    rule: str
    severity: str
    side: str
    trace: str
    session: str | None
    seq: int | None
    t_ms: float | None
    message: str


@dataclass
class Context:
    """What every check may read; `schema` (the schema pass) is computed on first use, and only
    when `validate` is on."""

    timeline: pl.DataFrame
    facts: Facts
    turns: TurnFacts
    headers: dict[str, dict[str, Any]]
    validate: bool = True
    # the replays' fidelity as the Analysis computed it (computed here when not handed over)
    fidelity_of: Callable[[], list[ReplayFidelity]] | None = None
    # the weight pass's options, and its fields as the Analysis computed them
    weight: WeightOptions = DEFAULT
    weights_of: Callable[[], list[ReplayWeight]] | None = None
    lines_of: Callable[[], pl.DataFrame] | None = None

    @cached_property
    def schema(self) -> SchemaFacts | None:
        return validate_timeline(self.timeline) if self.validate else None

    @cached_property
    def fidelity(self) -> list[ReplayFidelity]:
        """Each replay row against its source (`acp_trace.fidelity`), in replays-table order."""
        if self.fidelity_of is not None:
            return self.fidelity_of()
        return replay_fidelity(self.timeline, self.facts, self.turns, self.headers)

    @cached_property
    def weights(self) -> list[ReplayWeight]:
        """Each replay row's weight (`acp_trace.weight`), in replays-table order."""
        if self.weights_of is not None:
            return self.weights_of()
        return replay_weights(self.timeline, self.facts, self.weight, self.lines)

    @cached_property
    def lines(self) -> pl.DataFrame:
        """Each client and agent line's length, session and kind (`weight.lines.line_rows`)."""
        return self.lines_of() if self.lines_of is not None else line_rows(self.timeline)

    def at(
        self,
        rule: str,
        row: int,
        session: str | None,
        message: str,
        severity: str = "",
        side: str = "",
    ) -> Finding:
        """A finding pointing at a timeline row (severity and side: the rule's by default)."""
        trace = self.timeline["trace"][row]
        return Finding(
            rule=rule,
            severity=severity or RULES[rule].severity,
            side=side or RULES[rule].side,
            trace=trace,
            session=session,
            seq=self.timeline["seq"][row],
            t_ms=self.timeline["t_ms"][row],
            message=message,
        )

    def seq(self, row: int | None) -> str:
        """`seq N` of a row, for messages."""
        return "the end of the trace" if row is None else f"seq {self.timeline['seq'][row]}"

    def describe(self, w: Window) -> str:
        """`session/resume (id 3, seq 12)`, with the cursor for resumes."""
        cursor = "" if w.method == "session/load" else f", replayFrom {_short(w.cursor)}"
        return f"{w.method} (id {w.request_id}, {self.seq(w.req_row)}{cursor})"


@dataclass(frozen=True)
class Rule:
    """A rule of the catalogue and the function that checks it."""

    id: str
    severity: str
    side: str  # who breaks it, unless a finding says otherwise
    summary: str
    check: Callable[[Context], Iterator[Finding]]


RULES: dict[str, Rule] = {}
# Passes over all findings before the severity filter (guesses.py registers its downgrade).
ADJUSTERS: list[Callable[[Context, list[Finding]], list[Finding]]] = []


def rule(rule_id: str, severity: str, summary: str, side: str = "agent") -> Callable[..., Any]:
    """Register a check function under a rule id; its entry must be the catalogue's."""
    entry = Entry(rule_id, severity, side, summary)
    if ENTRIES.get(rule_id) != entry:
        raise RuntimeError(f"rule {entry} is not the catalogue's (checks/catalogue.py)")

    def register(
        fn: Callable[[Context], Iterator[Finding]],
    ) -> Callable[[Context], Iterator[Finding]]:
        RULES[rule_id] = Rule(rule_id, severity, side, summary, fn)
        return fn

    return register


def _short(value: Any) -> str:
    """A JSON value in at most 60 characters, for messages."""
    text = json_text(value)  # integers beyond 64 bits too
    return text if len(text) <= 60 else text[:57] + "..."


def run_checks(
    ctx: Context, rules: list[str] | None = None, min_severity: str = "info"
) -> pl.DataFrame:
    """Run the selected rules (all by default) and return findings at or above min_severity."""
    allowed = SEVERITIES[: SEVERITIES.index(min_severity) + 1]
    findings = [f for rule_id in rules or list(RULES) for f in RULES[rule_id].check(ctx)]
    for adjust in ADJUSTERS:  # guesses.downgrade: findings that rest on an importer's guess
        findings = adjust(ctx, findings)
    findings = [f for f in findings if f.severity in allowed]
    frame = pl.DataFrame([f.__dict__ for f in findings], schema=FINDING_SCHEMA)
    return frame.sort(["trace", "seq", "rule"], nulls_last=True, maintain_order=True)
