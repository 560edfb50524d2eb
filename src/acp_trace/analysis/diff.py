"""Two sets of traces compared: did the replay gap or the request latency get better or worse,
did outcomes flip, which findings are new (docs/analysis.md, "Comparing two runs").

Per agent and method, the p50 and p90 of each side and the change NEW - BASE with a bootstrap
confidence interval (resampling each side with replacement, seeded, so a run is repeatable).
A change is a `regression` (or an `improvement`) only when the interval excludes zero and the
change exceeds every threshold given (a share of BASE's value and/or milliseconds); a change
over the thresholds whose interval still holds zero is `inconclusive`, and with fewer samples
than `min_samples` on a side the verdict is `too few samples`: the tool says the interval is
too wide rather than flag. Outcomes are matched request by request where the same (session,
request id) occurs once on each side (the same conversation recorded twice), and compared as
counts per agent and method otherwise; findings are compared as counts per rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from acp_trace.analysis.diff_counts import finding_counts, flips, outcome_counts
from acp_trace.analysis.front import Analysis, Paths, analyze
from acp_trace.quantities import count, fixed, percent

STATS = {"p50": 50.0, "p90": 90.0}
REGRESSION, IMPROVEMENT = "regression", "improvement"
NO_CHANGE, INCONCLUSIVE, TOO_FEW = "no change", "inconclusive", "too few samples"


@dataclass(frozen=True)
class DiffOptions:
    """How sure and how large a change must be before it is flagged."""

    threshold_pct: float | None = 20.0
    threshold_ms: float | None = None
    confidence: float = 0.95
    resamples: int = 2000
    min_samples: int = 5
    seed: int = 0


METRIC_SCHEMA: dict[str, Any] = {
    "metric": pl.String,  # gap | latency
    "agent": pl.String,
    "method": pl.String,
    "stat": pl.String,  # p50 | p90
    "base_versions": pl.String,
    "new_versions": pl.String,
    "base_n": pl.Int64,
    "new_n": pl.Int64,
    "base_ms": pl.Float64,
    "new_ms": pl.Float64,
    "change_ms": pl.Float64,
    "change_pct": pl.Float64,
    "ci_low_ms": pl.Float64,
    "ci_high_ms": pl.Float64,
    "verdict": pl.String,
}


@dataclass
class Diff:
    """The comparison of BASE and NEW: metrics, outcome changes and finding changes."""

    metrics: pl.DataFrame
    outcomes: pl.DataFrame
    flips: pl.DataFrame
    findings: pl.DataFrame
    options: DiffOptions = field(default_factory=DiffOptions)
    base: Analysis | None = None
    new: Analysis | None = None

    @property
    def regressions(self) -> list[str]:
        """One sentence per regression flagged (metrics, flips to a worse outcome, new kinds of
        bad outcome, new error rules); empty when nothing got worse."""
        out = [
            f"{r['metric']} {r['stat']} of {r['agent']} {r['method']}: {fixed(r['base_ms'], 1)} -> "
            f"{fixed(r['new_ms'], 1)} ms ({percent(r['change_pct'])}, {self.ci_text()} "
            f"[{fixed(r['ci_low_ms'], 1, sign=True)}, {fixed(r['ci_high_ms'], 1, sign=True)}] ms)"
            for r in self.metrics.filter(pl.col("verdict") == REGRESSION).iter_rows(named=True)
        ]
        out += [
            f"{r['agent']} {r['method']} {r['session']} (id {r['request_id']}): "
            f"{r['base_outcome']} -> {r['new_outcome']}"
            for r in self.flips.filter(pl.col("worse")).iter_rows(named=True)
        ]
        out += [
            f"{r['agent']} {r['method']}: {count(r['new_count'])} {r['outcome']} in NEW, none in BASE"
            for r in self.outcomes.filter(pl.col("worse")).iter_rows(named=True)
        ]
        out += [
            f"rule {r['rule']} ({r['severity']}): {count(r['new_count'])} in NEW, none in BASE"
            for r in self.findings.filter(
                (pl.col("change") == "new") & (pl.col("severity") == "error")
            ).iter_rows(named=True)
        ]
        return out

    def ci_text(self) -> str:
        return f"{self.options.confidence:.0%} CI"


def diff(base: Analysis | Paths, new: Analysis | Paths, options: DiffOptions | None = None) -> Diff:
    """Compare two sets of traces, BASE first (Analysis objects, or paths to analyze)."""
    base = base if isinstance(base, Analysis) else analyze(base)
    new = new if isinstance(new, Analysis) else analyze(new)
    opts = options or DiffOptions()
    metrics = pl.concat(
        [
            _metrics("gap", _gaps(base.replays), _gaps(new.replays), opts),
            _metrics("latency", _latencies(base.timeline), _latencies(new.timeline), opts),
        ]
    )
    return Diff(
        metrics=metrics,
        outcomes=outcome_counts(base.replays, new.replays),
        flips=flips(base.replays, new.replays),
        findings=finding_counts(base.findings(), new.findings()),
        options=opts,
        base=base,
        new=new,
    )


def parse_threshold(text: str) -> tuple[float | None, float | None]:
    """`20%` -> (20, None); `50ms` or `50` -> (None, 50); `1.5s` -> (None, 1500).

    ValueError (with what a threshold looks like) for anything else."""
    value = text.strip().lower()
    try:
        if value.endswith("%"):
            return float(value[:-1]), None
        if value.endswith("ms"):
            return None, float(value[:-2])
        if value.endswith("s"):
            return None, float(value[:-1]) * 1000
        return None, float(value)
    except ValueError:
        raise ValueError(
            f"--threshold {text}: expected a share of BASE such as 20% or a duration such as "
            "50ms or 1.5s"
        ) from None


# ---------------------------------------------------------------- samples


def _gaps(replays: pl.DataFrame) -> pl.DataFrame:
    """(agent, version, method, ms): the gap of every replay that has one."""
    gap = pl.col("gap_ms")  # from the marker, else a vendor event, else the last history
    return replays.select(
        pl.col("agent").fill_null("unknown agent"),
        pl.col("agent_version").fill_null("?").alias("version"),
        "method",
        gap.alias("ms"),
    ).drop_nulls("ms")


def _latencies(tl: pl.DataFrame) -> pl.DataFrame:
    """(agent, version, method, ms): request to response of every answered request."""
    return (
        tl.filter(pl.col("kind") == "request", pl.col("latency_ms").is_not_null())
        .select(
            pl.col("agent").fill_null("unknown agent"),
            pl.col("agent_version").fill_null("?").alias("version"),
            "method",
            pl.col("latency_ms").alias("ms"),
        )
        .drop_nulls("method")
    )


def _metrics(name: str, base: pl.DataFrame, new: pl.DataFrame, opts: DiffOptions) -> pl.DataFrame:
    keys = (
        pl.concat([base.select("agent", "method"), new.select("agent", "method")])
        .unique(maintain_order=True)
        .sort("agent", "method", maintain_order=True)
    )
    rows = []
    rng = np.random.default_rng(opts.seed)
    for agent, method in keys.iter_rows():
        b = base.filter(pl.col("agent") == agent, pl.col("method") == method)
        n = new.filter(pl.col("agent") == agent, pl.col("method") == method)
        b_ms, n_ms = b["ms"].to_numpy(), n["ms"].to_numpy()
        for stat, q in STATS.items():
            rows.append(
                (name, agent, method, stat, _versions(b), _versions(n), len(b_ms), len(n_ms),
                 *_compare(b_ms, n_ms, q, opts, rng))
            )  # fmt: skip
    return pl.DataFrame(rows, schema=METRIC_SCHEMA, orient="row")


def _versions(part: pl.DataFrame) -> str | None:
    names = part["version"].unique(maintain_order=True).to_list()
    return ", ".join(names) if names else None


def _compare(
    base: NDArray[np.float64],
    new: NDArray[np.float64],
    q: float,
    opts: DiffOptions,
    rng: np.random.Generator,
) -> tuple[Any, ...]:
    """(base, new, change, change %, CI low, CI high, verdict) of one statistic."""
    if len(base) == 0 or len(new) == 0:
        b = float(np.percentile(base, q)) if len(base) else None
        n = float(np.percentile(new, q)) if len(new) else None
        only = "only in NEW" if b is None else "only in BASE"
        return (b, n, None, None, None, None, only)
    b, n = float(np.percentile(base, q)), float(np.percentile(new, q))
    change = n - b
    pct = change / b * 100 if b else None
    if min(len(base), len(new)) < opts.min_samples:
        return (b, n, change, pct, None, None, TOO_FEW)
    low, high = _bootstrap(base, new, q, opts, rng)
    return (b, n, change, pct, low, high, _verdict(change, pct, low, high, opts))


def _bootstrap(
    base: NDArray[np.float64],
    new: NDArray[np.float64],
    q: float,
    opts: DiffOptions,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """The percentile bootstrap interval of percentile(NEW, q) - percentile(BASE, q)."""
    diffs = np.empty(opts.resamples)
    block = max(1, 2_000_000 // max(len(base), len(new)))  # bounded memory per block
    for start in range(0, opts.resamples, block):
        size = min(block, opts.resamples - start)
        b = np.percentile(base[rng.integers(0, len(base), (size, len(base)))], q, axis=1)
        n = np.percentile(new[rng.integers(0, len(new), (size, len(new)))], q, axis=1)
        diffs[start : start + size] = n - b
    tail = (1 - opts.confidence) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(low), float(high)


def _verdict(change: float, pct: float | None, low: float, high: float, opts: DiffOptions) -> str:
    big = (opts.threshold_pct is None or (pct is not None and abs(pct) > opts.threshold_pct)) and (
        opts.threshold_ms is None or abs(change) > opts.threshold_ms
    )
    if not big:
        return NO_CHANGE
    if low > 0 or high < 0:
        return REGRESSION if change > 0 else IMPROVEMENT
    return INCONCLUSIVE
