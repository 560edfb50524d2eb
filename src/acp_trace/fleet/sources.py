"""Replays whose source lies in another partition (rules.md "Replay fidelity": a source is
looked for over every trace given). Each worker returns, per trace, the sessions a source
search links (`sessions`); the traces that share a session with a trace of another partition
are analyzed again together, here, and their replay rows and fidelity findings replace the
partitions' own, so the result is what one process gives."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from acp_trace.analysis.checks import RULES
from acp_trace.analysis.front import Analysis
from acp_trace.trace.paths import Found
from acp_trace.trace.reader import read_found
from acp_trace.weight import DEFAULT, WeightOptions


def fidelity_rules() -> list[str]:
    """The rules that read a replay's source (their findings can cross partitions)."""
    return [r for r, rule in RULES.items() if rule.check.__module__.endswith(".fidelity_rules")]


def linked_traces(sessions: pl.DataFrame) -> set[str]:
    """The traces holding a session that another trace holds too."""
    if not sessions.height:
        return set()
    shared = (
        sessions.group_by("session")
        .agg(pl.col("trace").n_unique().alias("traces"))
        .filter(pl.col("traces") > 1)["session"]
    )
    return set(sessions.filter(pl.col("session").is_in(shared.implode()))["trace"].to_list())


def across_partitions(
    out: dict[str, pl.DataFrame],
    found: Sequence[Found],
    *,
    fmt: str | None,
    marker_meta: str | None,
    weight: WeightOptions | None = None,
) -> dict[str, pl.DataFrame]:
    """`out` (the partitions' tables joined) with the replay rows and fidelity findings of the
    linked traces computed over all of them at once."""
    traces = linked_traces(out["sessions"])
    if not traces:
        return out
    files = {t.split("#", 1)[0] for t in traces}
    records = read_found([f for f in found if str(f.path) in files], fmt=fmt)
    a = Analysis(records, marker_meta, weight=DEFAULT if weight is None else weight)
    mine = pl.col("trace").is_in(sorted(traces))
    out = dict(out)
    if out["replays"].width:
        out["replays"] = _replaced(out["replays"], a.replays.filter(mine), mine)
    if out["findings"].width:
        rules = fidelity_rules()
        again = a.findings(rules, schema=False).filter(mine)
        kept = out["findings"].filter(~(mine & pl.col("rule").is_in(rules)))
        out["findings"] = pl.concat([kept, again.select(kept.columns)]).sort(
            ["trace", "seq", "rule"], nulls_last=True, maintain_order=True
        )
    return out


def _replaced(table: pl.DataFrame, again: pl.DataFrame, mine: pl.Expr) -> pl.DataFrame:
    """The rows of the linked traces taken from `again`, each trace where it stood."""
    order = {t: i for i, t in enumerate(table["trace"].unique(maintain_order=True).to_list())}
    place = pl.col("trace").replace_strict(order, return_dtype=pl.Int64).alias("_place")
    both = pl.concat([table.filter(~mine), again.select(table.columns)])
    return both.with_columns(place).sort("_place", maintain_order=True).drop("_place")
