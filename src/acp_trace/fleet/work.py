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


COMPUTED = ("replays", "findings", "turns", "requests", "losses")  # what `tables` may ask


def analyze_part(part: Part) -> dict[str, pl.DataFrame]:
    """The per-trace tables of one partition (fleet.result.TABLES), in single-process order.

    With `part.dataset` the worker appends them (and the records) to that Parquet dataset and
    returns only the tables the client needs to report: `skipped`, and `written` counts.
    """
    records = read_found(part.found, fmt=part.fmt)
    a = Analysis(records, marker_meta=part.marker_meta)
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
    }
    if part.dataset is not None:
        from acp_trace.render.dataset import append

        written = append(a, part.dataset)
        tables["written"] = pl.DataFrame(
            {"table": list(written), "rows": list(written.values())},
            schema={"table": pl.String, "rows": pl.Int64},
        )
    return tables
