"""What one worker does with one partition: read it, analyze it, return (or write) its tables.

These are plain module-level functions of plain data, so a process pool or Dask can ship them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from acp_trace.analysis.front import Analysis
from acp_trace.analysis.latency import request_rows
from acp_trace.trace.paths import Found
from acp_trace.trace.reader import read_found, skipped_inputs
from acp_trace.weight import DEFAULT, WeightOptions


@dataclass(frozen=True)
class Part:
    """One partition: its files (as find_traces found them) and how to read and keep them."""

    index: int
    found: tuple[Found, ...]
    fmt: str | None = None
    marker_meta: str | None = None
    dataset: str | None = None  # a directory: append the partition there instead of returning it
    schema: bool = True  # validate messages against the ACP JSON Schema (check's --no-schema)
    # the tables to compute (of COMPUTED); the others come back empty, without columns
    tables: tuple[str, ...] = ("replays", "findings", "turns", "requests")
    weight: WeightOptions = DEFAULT  # the client limits and deadlines (--frame-limit, ...)


COMPUTED = ("replays", "findings", "turns", "requests", "losses")  # what `tables` may ask


def analyze_part(part: Part) -> dict[str, pl.DataFrame]:
    """The per-trace tables of one partition (fleet.result.TABLES), in single-process order.

    With `part.dataset` the worker appends them (and the records) to that Parquet dataset and
    returns only the tables the client needs to report: `skipped`, `written` counts, and
    `unwritten` (the traces whose files could not be written, with the reason).
    """
    records = read_found(part.found, fmt=part.fmt)
    # a dataset's rows depend on their trace alone: sources in the replay's own trace
    a = Analysis(
        records,
        marker_meta=part.marker_meta,
        per_trace_sources=part.dataset is not None,
        weight=part.weight,
    )
    wanted: dict[str, Callable[[], pl.DataFrame]] = {
        "replays": lambda: a.replays,
        "findings": lambda: a.findings(schema=part.schema),
        "turns": lambda: a.turns,
        "requests": lambda: request_rows(a.timeline),
        "losses": lambda: a.losses,
    }
    tables = {
        name: make() if name in part.tables else pl.DataFrame() for name, make in wanted.items()
    }
    tables |= {
        "traces": a.traces(),
        "skipped": skipped_inputs(records),
        "untimed": pl.DataFrame({"trace": a.untimed()}, schema={"trace": pl.String}),
        # what ties a replay to a source in another partition (fleet.sources)
        "sessions": a.linked_sessions()
        if {"replays", "findings"} & set(part.tables)
        else pl.DataFrame(schema={"trace": pl.String, "session": pl.String}),
    }
    if part.dataset is not None:
        from acp_trace.render.dataset import append

        appended = append(a, part.dataset)
        written = appended.counts()
        tables["written"] = pl.DataFrame(
            {"table": list(written), "rows": list(written.values())},
            schema={"table": pl.String, "rows": pl.Int64},
        )
        tables["unwritten"] = pl.DataFrame(
            appended.failed, schema={"trace": pl.String, "problem": pl.String}, orient="row"
        )
    return tables
