"""Partitions are contiguous runs of the file list, balanced by bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_trace.fleet import partition
from acp_trace.trace.paths import Found


def _files(tmp_path: Path, sizes: list[int]) -> list[Found]:
    out = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i}.jsonl"
        path.write_bytes(b"x" * size)
        out.append(Found(path, str(tmp_path), explicit=False))
    return out


@pytest.mark.parametrize(
    ("sizes", "count", "expected"),
    [
        ([10] * 8, 4, [2, 2, 2, 2]),
        ([10] * 7, 2, [4, 3]),
        ([100, 1, 1, 1, 1], 2, [1, 4]),  # a file larger than a share is a run of its own
        ([1, 1, 1, 100], 2, [3, 1]),
        ([10] * 3, 8, [1, 1, 1]),  # never an empty run, never more runs than files
        ([10] * 5, 1, [5]),
        ([0, 0, 0], 2, [2, 1]),  # empty files still spread
    ],
)
def test_runs_are_contiguous_and_balanced(
    tmp_path: Path, sizes: list[int], count: int, expected: list[int]
) -> None:
    """Lengths of the runs for a given list of file sizes; concatenated they are the list."""
    found = _files(tmp_path, sizes)
    runs = partition(found, count)
    assert [len(r) for r in runs] == expected
    assert [f for r in runs for f in r] == found


def test_nothing_to_partition() -> None:
    """No file gives no partition."""
    assert partition([], 4) == []
