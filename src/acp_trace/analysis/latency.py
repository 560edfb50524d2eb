"""Latency: request-to-response statistics and prompt-turn phases (the turns themselves are
found by the turn pass, `analysis/turns.py`: its names are here too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from acp_trace.analysis.columns import values_at
from acp_trace.analysis.turns import AGENT_OUTPUT_KINDS, Turn, TurnFacts, collect_turns

__all__ = [
    "AGENT_OUTPUT_KINDS",
    "GROUPS",
    "PHASE_ORDER",
    "TURN_SCHEMA",
    "Turn",
    "TurnFacts",
    "aggregate_requests",
    "collect_turns",
    "request_latency",
    "request_rows",
    "turn_phases",
    "turns_table",
]

# Every grouping keeps agents apart (one agent's slow method never hides in another's); the
# first keys are what the rows are sorted by.
GROUPS = {
    "method": ["method", "agent", "agent_version"],
    "agent": ["agent", "agent_version", "method"],
    "trace": ["trace", "method"],
}


def request_latency(tl: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """Request-to-response statistics per method (and agent or trace): count, errors, p50..max."""
    return aggregate_requests(request_rows(tl), by)


def request_rows(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per request: trace, agent, agent_version, method, latency_ms and how it was
    answered (`answer`: response, error, or null when unanswered)."""
    requests = tl.filter(pl.col("kind") == "request")
    answers = tl.select(pl.col("row").alias("peer_row"), pl.col("kind").alias("answer"))
    joined = requests.join(answers, on="peer_row", how="left")
    return joined.select("trace", "agent", "agent_version", "method", "latency_ms", "answer")


def aggregate_requests(rows: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """The statistics of `request_latency` from `request_rows` (of one trace or of many)."""
    keys = GROUPS[by]
    lat = pl.col("latency_ms")
    return (
        rows.group_by(keys)
        .agg(
            pl.len().alias("count"),
            (pl.col("answer") == "error").sum().alias("errors"),
            pl.col("answer").is_null().sum().alias("unanswered"),
            lat.quantile(0.5, "linear").alias("p50_ms"),
            lat.quantile(0.9, "linear").alias("p90_ms"),
            lat.quantile(0.99, "linear").alias("p99_ms"),
            lat.max().alias("max_ms"),
        )
        .sort(keys)
    )


TURN_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "session": pl.String,
    "agent": pl.String,
    "agent_version": pl.String,
    "protocol": pl.Int64,
    "request_seq": pl.Int64,
    "first_chunk_ms": pl.Float64,
    "acceptance_ms": pl.Float64,
    "end_ms": pl.Float64,
    "response_ms": pl.Float64,
    "stop_reason": pl.String,
}


def turns_table(tl: pl.DataFrame, turns: TurnFacts) -> pl.DataFrame:
    """One row per prompt turn: request to first agent chunk, to acceptance, to the end."""
    agents = {
        t: (a, v)
        for t, a, v in tl.select("trace", "agent", "agent_version").unique("trace").iter_rows()
    }
    seqs = values_at(tl["seq"], (t.req_row for t in turns.turns))
    t_ms = values_at(tl["t_ms"], _rows_timed(turns.turns))

    def since(turn: Turn, row: int | None) -> float | None:
        start, value = t_ms.get(turn.req_row), None if row is None else t_ms.get(row)
        if start is None or value is None:
            return None
        return float(value - start)

    rows = [
        (
            t.trace,
            t.session,
            *agents.get(t.trace, (None, None)),
            t.protocol,
            seqs.get(t.req_row),
            since(t, t.first_chunk_row),
            since(t, t.acceptance_rows[0] if t.acceptance_rows else None),
            since(t, t.end_row),
            since(t, t.response_row),
            t.stop_reason,
        )
        for t in turns.turns
    ]
    return pl.DataFrame(rows, schema=TURN_SCHEMA, orient="row")


def _rows_timed(turns: list[Turn]) -> Iterator[int | None]:
    """The rows whose times the turns table shows."""
    for t in turns:
        yield from (t.req_row, t.first_chunk_row, t.end_row, t.response_row)
        yield t.acceptance_rows[0] if t.acceptance_rows else None


def turn_phases(turns: pl.DataFrame, by: str = "method") -> pl.DataFrame:
    """p50/p90/p99/max of each prompt-turn phase, grouped like request_latency, the phases of
    a group in the order they happen inside its turns (`phase_order`), not by their p50: a
    phase that only slow turns reach would otherwise come after the end of the quick ones."""
    keys = [k for k in GROUPS[by] if k != "method"]
    phases = list(PHASE_ORDER)
    long = turns.unpivot(
        index=[*keys, "trace"] if "trace" not in keys else keys,
        on=phases,
        variable_name="phase",
        value_name="ms",
    )
    group = [*keys, "phase"]
    stats = long.group_by(group).agg(
        pl.col("ms").count().alias("count"),
        pl.col("ms").quantile(0.5, "linear").alias("p50_ms"),
        pl.col("ms").quantile(0.9, "linear").alias("p90_ms"),
        pl.col("ms").quantile(0.99, "linear").alias("p99_ms"),
        pl.col("ms").max().alias("max_ms"),
    )
    ranks = phase_order(turns, keys)
    return (
        stats.join(ranks, on=group, how="left", nulls_equal=True)
        .sort(*keys, "rank", nulls_last=True)
        .drop("rank")
    )


def phase_order(turns: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per group of `keys`, each phase's place in a turn (`rank`, 0 first): a phase comes
    before another when it does so in most turns that reached both; phases never seen
    together keep PHASE_ORDER (a phase no turn reached last)."""
    phases = list(PHASE_ORDER)
    pairs = [(x, y) for x in phases for y in phases if x != y]
    before = [(pl.col(x) < pl.col(y)).fill_null(False).sum().alias(f"{x}<{y}") for x, y in pairs]
    seen = [pl.col(x).is_not_null().sum().alias(x) for x in phases]
    rows = []
    grouped = turns.group_by(keys).agg(*before, *seen) if keys else turns.select(*before, *seen)
    for r in grouped.iter_rows(named=True):
        wins = {x: sum(r[f"{x}<{y}"] > r[f"{y}<{x}"] for y in phases if y != x) for x in phases}
        order = sorted(phases, key=lambda x: (r[x] == 0, -wins[x], PHASE_ORDER[x]))
        rows += [{**{k: r[k] for k in keys}, "phase": x, "rank": i} for i, x in enumerate(order)]
    schema: dict[str, Any] = {k: turns.schema[k] for k in keys}
    schema.update(phase=pl.String, rank=pl.Int64)
    return pl.DataFrame(rows, schema=schema)


# The prompt-turn phases, in the order a table lists those that tie: the agent's first chunk,
# the acceptance of the prompt (claude-agent-acp's session-materialization update), the end.
PHASE_ORDER = {"first_chunk_ms": 0, "acceptance_ms": 1, "end_ms": 2}
