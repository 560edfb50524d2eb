"""What changed between two runs beyond the timings (acp-trace diff): outcome counts per agent
and method, outcome flips of the same request, finding counts per rule."""

from __future__ import annotations

import polars as pl

GOOD_OUTCOMES = frozenset({"complete", "v1_loaded"})


def outcome_counts(base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Per agent, method and outcome: the count on each side; `worse` marks a bad outcome that
    NEW has and BASE never had."""

    def counts(replays: pl.DataFrame, side: str) -> pl.DataFrame:
        return replays.group_by(
            pl.col("agent").fill_null("unknown agent"), "method", "outcome"
        ).agg(pl.len().alias(side))

    joined = counts(base, "base_count").join(
        counts(new, "new_count"), on=["agent", "method", "outcome"], how="full", coalesce=True
    )
    joined = joined.with_columns(pl.col("base_count", "new_count").fill_null(0).cast(pl.Int64))
    worse = (
        (pl.col("base_count") == 0)
        & (pl.col("new_count") > 0)
        & ~pl.col("outcome").is_in(sorted(GOOD_OUTCOMES))
    )
    return joined.with_columns(worse.alias("worse")).sort("agent", "method", "outcome")


def flips(base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Outcome changes of the same request: (session, request id) once on each side."""
    key = ["session", "request_id"]

    def unique(replays: pl.DataFrame) -> pl.DataFrame:
        once = replays.group_by(key).agg(pl.len().alias("n")).filter(pl.col("n") == 1)
        return replays.join(once.select(key), on=key, how="semi", nulls_equal=True)

    pairs = (
        unique(base)
        .select(
            pl.col("agent").fill_null("unknown agent"),
            "method",
            *key,
            pl.col("outcome").alias("base_outcome"),
        )
        .join(
            unique(new).select(*key, pl.col("outcome").alias("new_outcome")),
            on=key,
            how="inner",
            nulls_equal=True,
        )
    )
    worse = pl.col("base_outcome").is_in(sorted(GOOD_OUTCOMES)) & ~pl.col("new_outcome").is_in(
        sorted(GOOD_OUTCOMES)
    )
    return (
        pairs.filter(pl.col("base_outcome") != pl.col("new_outcome"))
        .with_columns(worse.alias("worse"))
        .sort("agent", "session", "request_id")
    )


def finding_counts(base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Per rule: the count on each side and `new`, `gone`, `more`, `fewer` or `same`."""

    def counts(findings: pl.DataFrame, side: str) -> pl.DataFrame:
        return findings.group_by("rule", "severity").agg(pl.len().alias(side))

    joined = counts(base, "base_count").join(
        counts(new, "new_count"), on=["rule", "severity"], how="full", coalesce=True
    )
    b, n = pl.col("base_count"), pl.col("new_count")
    change = (
        pl.when(b == 0)
        .then(pl.lit("new"))
        .when(n == 0)
        .then(pl.lit("gone"))
        .when(n > b)
        .then(pl.lit("more"))
        .when(n < b)
        .then(pl.lit("fewer"))
        .otherwise(pl.lit("same"))
    )
    return (
        joined.with_columns(b.fill_null(0).cast(pl.Int64), n.fill_null(0).cast(pl.Int64))
        .with_columns(change.alias("change"))
        .sort("rule")
    )
