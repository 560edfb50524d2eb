"""Size-balanced partitions of a file list: contiguous runs, so order survives concatenation."""

from __future__ import annotations

import os
from collections.abc import Sequence

from acp_trace.trace.paths import Found


def partition(found: Sequence[Found], count: int) -> list[list[Found]]:
    """At most `count` contiguous runs of `found`, each close to an equal share of the bytes
    (a file larger than a share is a run of its own); no run is empty."""
    if not found:
        return []
    sizes = [file_size(f) + 1 for f in found]  # + 1: a file costs something even when empty
    share = sum(sizes) / max(1, count)
    runs: list[list[Found]] = [[]]
    filled = 0
    for item, size in zip(found, sizes, strict=True):
        if runs[-1] and filled + size / 2 > share and len(runs) < count:
            runs.append([])
            filled = 0
        runs[-1].append(item)
        filled += size
    return runs


def file_size(item: Found) -> int:
    """The size of a found file in bytes (0 when it cannot be read)."""
    try:
        return os.stat(item.path).st_size
    except OSError:
        return 0
