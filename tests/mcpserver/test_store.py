"""The store (acp_trace.mcpserver.store): each file is read and summarized once, and again
only when what identifies its version (device, inode, size, mtime_ns) changes; the pages of
list_traces cost no new analysis."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson

from acp_trace.mcpserver import answers
from acp_trace.mcpserver.paging import Page
from acp_trace.mcpserver.store import Store
from testpaths import SAMPLES

NAMES = ("demo-v1-load.jsonl", "demo-v2-complete.jsonl", "demo-v2-children.jsonl")


def pages(store: Store) -> list[str]:
    """Every row of list_traces, one a page, following next_cursor."""
    names: list[str] = []
    cursor = None
    while True:
        page = orjson.loads(
            answers.list_traces(store.load(), Page("list_traces", {}, cursor, 1), None, None, None)
        )
        names += [r["trace"] for r in page["rows"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return names


def test_each_file_is_analyzed_again_only_when_it_changes(tmp_path: Path) -> None:
    """Paging costs no analysis; a file that grows, or whose mtime alone changes, is read
    again, and only that file; a file removed is gone from the next answer."""
    for name in NAMES:
        shutil.copy(SAMPLES / name, tmp_path)
    store = Store([str(tmp_path)])
    assert sorted(pages(store)) == sorted(NAMES)
    assert store.analyses == 3
    assert sorted(pages(store)) == sorted(NAMES) and store.analyses == 3
    grown = tmp_path / NAMES[0]
    with grown.open("ab") as out:
        out.write(b"\n")
    pages(store)
    assert store.analyses == 4
    st = (tmp_path / NAMES[1]).stat()
    os.utime(tmp_path / NAMES[1], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))
    pages(store)
    assert store.analyses == 5
    (tmp_path / NAMES[2]).unlink()
    assert sorted(pages(store)) == sorted(NAMES[:2]) and store.analyses == 5
