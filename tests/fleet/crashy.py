"""A partition function that kills its worker on one file: the fleet's failure path."""

from __future__ import annotations

import os

import polars as pl

from acp_trace.fleet.work import Part, analyze_part


def crash_on_marked_file(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that a partition holding a file named `crash-*` kills the process."""
    if any(f.path.name.startswith("crash-") for f in part.found):
        os._exit(7)
    return analyze_part(part)


def raise_on_marked_file(part: Part) -> dict[str, pl.DataFrame]:
    """analyze_part, except that a partition holding a file named `crash-*` raises."""
    if any(f.path.name.startswith("crash-") for f in part.found):
        raise RuntimeError("simulated worker failure")
    return analyze_part(part)
