"""The analyzer's front door: traces in, one `Analysis` (all tables and facts) out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from acp_trace.analysis import checks, latency, phases
from acp_trace.analysis.replay_fidelity import fidelity_columns, linked_sessions, replay_fidelity
from acp_trace.analysis.replay_weight import replay_weights, weight_columns
from acp_trace.analysis.replays import Facts, collect, replays_table
from acp_trace.analysis.timeline import timeline as build_timeline
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.analysis.vendor_events import registry
from acp_trace.errors import UsageError
from acp_trace.fidelity import ReplayFidelity
from acp_trace.trace.reader import headers, read_trace, skipped_inputs
from acp_trace.weight import DEFAULT, ReplayWeight, WeightOptions
from acp_trace.weight.lines import line_rows

Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


@dataclass
class Analysis:
    """Records, timeline, replay facts and the derived tables of one set of traces."""

    records: pl.DataFrame
    marker_meta: str | None = None
    # look for a replay's source in its own trace only (the dataset's rows: one trace each)
    per_trace_sources: bool = False
    # the fidelity pass (False: its fields null and its rules silent: `watch`, whose folded
    # records hold neither a replay's whole source nor, while it runs, the replay itself)
    judge_fidelity: bool = True
    # the client limits, deadlines and quiet window the weight pass compares with
    weight: WeightOptions = DEFAULT
    # the checks' context per `schema` setting, kept: the schema pass runs once per Analysis
    _contexts: dict[bool, checks.Context] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        registry(self.marker_meta)  # a bad --marker-meta is a UsageError before any work

    @cached_property
    def timeline(self) -> pl.DataFrame:
        return build_timeline(self.records, marker_meta=self.marker_meta)

    @cached_property
    def facts(self) -> Facts:
        return collect(self.timeline, marker_meta=self.marker_meta)

    @cached_property
    def replays(self) -> pl.DataFrame:
        table = replays_table(self.timeline, self.facts)
        fields = fidelity_columns(self.fidelity, table.height)
        table = table.hstack(fields.get_columns())
        table = table.hstack(weight_columns(self.weights).get_columns())
        return table.hstack(phases.stderr_in_gaps(self.timeline, self.facts).get_columns())

    def _fidelity(self) -> list[ReplayFidelity]:
        return self.fidelity

    @cached_property
    def fidelity(self) -> list[ReplayFidelity]:
        """Each replay row set against its source (rules.md "Replay fidelity"), in the order
        of the replays table, with the differences behind its fields (none without the
        pass: `judge_fidelity`)."""
        if not self.judge_fidelity:
            return []
        return replay_fidelity(
            self.timeline,
            self.facts,
            self.turn_facts,
            self.headers,
            per_trace=self.per_trace_sources,
        )

    @cached_property
    def weights(self) -> list[ReplayWeight]:
        """What each replay row weighs and what a client would have suffered (rules.md
        "Replay weight, client limits and deadlines"), in the order of the replays table."""
        return replay_weights(self.timeline, self.facts, self.weight, self.weight_lines)

    @cached_property
    def weight_lines(self) -> pl.DataFrame:
        """Each client and agent line's length, session and kind (`weight.lines.line_rows`):
        read once for the weight fields and rules."""
        return line_rows(self.timeline)

    def linked_sessions(self) -> pl.DataFrame:
        """Per trace, the sessions a source search links across traces (`trace`, `session`)."""
        return linked_sessions(self.timeline, self.facts, self.turn_facts)

    @cached_property
    def gap_phases(self) -> pl.DataFrame:
        """The phases the agent's stderr names inside each replay's gap (analysis/phases.py)."""
        return phases.gap_phases(self.timeline, self.facts)

    @cached_property
    def turn_facts(self) -> latency.TurnFacts:
        return latency.collect_turns(self.timeline, self.facts)

    @cached_property
    def turns(self) -> pl.DataFrame:
        return latency.turns_table(self.timeline, self.turn_facts)

    @cached_property
    def losses(self) -> pl.DataFrame:
        """The traces whose recording lacks lines (analysis/summary.py `losses`)."""
        from acp_trace.analysis.summary import losses, summarize

        return losses(summarize(self.records))

    @cached_property
    def skipped(self) -> pl.DataFrame:
        """The files passed over while reading (`trace`, `problem`)."""
        return skipped_inputs(self.records)

    def untimed(self) -> list[str]:
        """The traces without timestamps (ordering-only imports)."""
        return untimed_traces(self.timeline)

    @cached_property
    def headers(self) -> dict[str, dict[str, Any]]:
        return headers(self.records)

    def latency(self, by: str = "method") -> pl.DataFrame:
        if by not in latency.GROUPS:
            raise UsageError(f"--by {by}: expected one of {', '.join(latency.GROUPS)}")
        return latency.request_latency(self.timeline, by)

    def findings(
        self, rules: list[str] | None = None, min_severity: str = "info", *, schema: bool = True
    ) -> pl.DataFrame:
        """The check findings; `schema=False` skips the JSON Schema validation of messages."""
        check_rule_filter(rules, min_severity)
        ctx = self._contexts.get(schema)
        if ctx is None:
            ctx = checks.Context(
                self.timeline,
                self.facts,
                self.turn_facts,
                self.headers,
                schema,
                self._fidelity,
                weight=self.weight,
                weights_of=lambda: self.weights,
                lines_of=lambda: self.weight_lines,
            )
            self._contexts[schema] = ctx
        return checks.run_checks(ctx, rules, min_severity)

    def traces(self) -> pl.DataFrame:
        """Per trace: its number of records and of malformed lines."""
        return (
            self.records.lazy()  # the three columns only: 1 GB of records cost +540 MB, now +70
            .select("trace", "seq", "kind")
            .group_by("trace", maintain_order=True)
            .agg(
                pl.col("seq").drop_nulls().n_unique().alias("records"),
                (pl.col("kind") == "malformed").sum().alias("malformed"),
            )
            .collect()
        )


def check_rule_filter(rules: list[str] | None, min_severity: str) -> None:
    """UsageError for an unknown rule id or severity."""
    unknown = [r for r in rules or [] if r not in checks.RULES]
    if unknown:
        raise UsageError(f"unknown rule id {', '.join(unknown)}; see `acp-trace rules`")
    if min_severity not in checks.SEVERITIES:
        raise UsageError(f"--min-severity {min_severity}: expected error, warning or info")


def analyze(
    paths: Paths | pl.DataFrame,
    *,
    marker_meta: str | None = None,
    fmt: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
    weight: WeightOptions | None = None,
) -> Analysis:
    """Read traces (or take a records DataFrame) and return their lazy Analysis. `workers`
    reads in that many processes (None: one per core when the input is large enough to gain
    from it; see `read_trace`): the result is the same. `weight`: the client limits,
    deadlines and quiet window the weight pass compares with (`weight.weight_options`)."""
    registry(marker_meta)  # options are checked before the input is read
    options = DEFAULT if weight is None else weight
    if isinstance(paths, pl.DataFrame):
        return Analysis(paths, marker_meta=marker_meta, weight=options)
    records = read_trace(paths, fmt=fmt, progress=progress, workers=workers)
    return Analysis(records, marker_meta=marker_meta, weight=options)


def replays_of(
    paths: Paths | pl.DataFrame, *, marker_meta: str | None = None, workers: int | None = 1
) -> pl.DataFrame:
    """The replays table of some traces (one row per replaying request and session)."""
    return analyze(paths, marker_meta=marker_meta, workers=workers).replays


def check(
    paths: Paths | pl.DataFrame,
    *,
    marker_meta: str | None = None,
    rules: list[str] | None = None,
    min_severity: str = "info",
    schema: bool = True,
    workers: int | None = 1,
) -> pl.DataFrame:
    """The findings of every rule (or the selected ones) on some traces; `schema=False` skips
    the JSON Schema validation of every message (rules schema-invalid and caused-error)."""
    a = analyze(paths, marker_meta=marker_meta, workers=workers)
    return a.findings(rules, min_severity, schema=schema)


def timeline_of(
    paths: Paths | pl.DataFrame, *, marker_meta: str | None = None, workers: int | None = 1
) -> pl.DataFrame:
    """The timeline table of some traces: records plus pairing, sessions and classes."""
    return analyze(paths, marker_meta=marker_meta, workers=workers).timeline
