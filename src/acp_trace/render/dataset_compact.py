"""`acp-trace compact DIR`: a dataset's one-file-per-trace partitions merged into one file each.

A partition folder is never changed in place. Its finished traces' files (those whose `.done`
exists) and earlier `compact-*` files are merged into one file in a fresh folder under
`DIR/_staging/`, next to hard links of the files it keeps as they are (the files of a trace
whose export died before `.done`, which a later export completes); then that folder and the
partition swap places in one `renameat2(RENAME_EXCHANGE)`, and the old content, now under
`_staging/`, is removed. A reader sees the old folder or the new one, never both and never a
mix, and a crash at any step leaves each row once: what it leaves under `_staging/` (outside
every table) and any temporary file of a dead export are removed by the next `compact`.
It holds the dataset's lock alone, so no export writes while it runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from acp_trace.errors import OutputError
from acp_trace.render.dataset import MARKER_FILE, SCHEMA_VERSION, TABLES, TRACES, open_dataset
from acp_trace.render.dataset_store import Store

STAGING = "_staging"
RENAME_EXCHANGE = 2
COMPACT_PREFIX = "compact-"


@dataclass
class Compacted:
    """What `compact` did: partitions merged, Parquet files before and after, leftovers removed."""

    partitions: int = 0
    files_before: int = 0
    files_after: int = 0
    removed: int = 0


def compact(directory: str | os.PathLike[str]) -> Compacted:
    """Merge the finished traces of every partition of the dataset `directory` into one file."""
    root = Path(directory)
    if not (root / MARKER_FILE).is_file():
        raise OutputError(f"{root}: not an acp-trace dataset (no {MARKER_FILE})")
    out = Compacted()
    with open_dataset(root) as store, store.lock(exclusive=True):
        folders = [f for table in TABLES for f in _partitions(store, table)]
        for folder in folders:  # refuse before anything is changed
            _check_entries(store, folder)
        out.removed = _remove_leftovers(store)
        for folder in folders:
            _compact_partition(store, folder, out)
    return out


def _check_entries(store: Store, folder: tuple[str, ...]) -> None:
    """Refuse a partition that holds anything but regular files (a symlink, a folder)."""
    fd = store.folder(folder, create=False)
    assert fd is not None
    for name in _entries(store, folder):
        if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise OutputError(
                f"{store.path(folder, name)}: not a regular file in a partition (a symlink or "
                "a folder); remove it, then compact again"
            )


def _partitions(store: Store, table: str) -> list[tuple[str, ...]]:
    """The partition folders of a table: TABLE/agent_key=*/day=*, real folders only."""
    found: list[tuple[str, ...]] = []
    for agent in _entries(store, (table,)):
        if agent.startswith("agent_key="):
            found += [(table, agent, d) for d in _entries(store, (table, agent)) if "=" in d]
    return found


def _entries(store: Store, folder: tuple[str, ...]) -> list[str]:
    fd = store.folder(folder, create=False)
    return [] if fd is None else sorted(os.listdir(fd))


def _compact_partition(store: Store, folder: tuple[str, ...], out: Compacted) -> None:
    fd = store.folder(folder, create=False)
    assert fd is not None
    merge: list[str] = []
    keep: list[str] = []
    for name in _entries(store, folder):
        if name.startswith((".", "_")) or not name.endswith(".parquet"):
            continue
        (merge if _finished(store, name) else keep).append(name)
    out.files_before += len(merge) + len(keep)
    if len(merge) < 2:
        out.files_after += len(merge) + len(keep)
        return
    staging = (STAGING, uuid.uuid4().hex)
    new_fd = store.folder(staging)
    assert new_fd is not None
    digest = hashlib.sha256("\n".join(merge).encode()).hexdigest()[:32]
    name = f"{COMPACT_PREFIX}{digest}-v{SCHEMA_VERSION}.parquet"
    sources = [str(store.path(folder, m)) for m in merge]
    merged = pl.concat([pl.scan_parquet(s) for s in sources], how="diagonal_relaxed")
    store.write_once(staging, name, lambda f: merged.collect().write_parquet(f))
    for kept in keep:
        os.link(kept, kept, src_dir_fd=fd, dst_dir_fd=new_fd, follow_symlinks=False)
    os.fsync(new_fd)
    parent = store.folder(folder[:-1], create=False)
    staging_parent = store.folder((STAGING,), create=False)
    assert parent is not None and staging_parent is not None
    _exchange(staging_parent, staging[1], parent, folder[-1])
    os.fsync(parent)
    os.fsync(staging_parent)
    store.forget(folder)
    store.forget(staging)
    shutil.rmtree(store.path(staging))  # the old content: rmtree does not follow symlinks
    out.partitions += 1
    out.files_after += 1 + len(keep)


def _finished(store: Store, name: str) -> bool:
    """Whether a partition file belongs to finished traces (a compact file always does)."""
    if name.startswith(COMPACT_PREFIX):
        return True
    trace_id = name.split("-v", 1)[0]
    return store.exists((TRACES, trace_id[:2]), f"{trace_id}.done")


def _exchange(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Swap two folders atomically (Linux renameat2 with RENAME_EXCHANGE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    rename = getattr(libc, "renameat2", None)
    if rename is None:
        raise OutputError("compact needs renameat2 (Linux 3.15 and glibc 2.28 or later)")
    if rename(src_dir, src.encode(), dst_dir, dst.encode(), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OutputError(
            f"{dst}: cannot swap in the compacted folder ({os.strerror(err)}); the dataset "
            "is unchanged"
        )


def _remove_leftovers(store: Store) -> int:
    """Temporary files of dead exports and `_staging/` of a dead compaction (no writer runs
    while the lock is held alone); how many were removed."""
    removed = 0
    staging = store.path((STAGING,))
    if staging.is_dir() and not staging.is_symlink():
        for entry in sorted(os.listdir(staging)):
            shutil.rmtree(staging / entry, ignore_errors=True)
            removed += 1
    for folder, _dirs, files in os.walk(store.root):  # does not follow symlinks
        rel = Path(folder).relative_to(store.root).parts
        if rel[:1] == (STAGING,):
            continue
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                os.unlink(Path(folder) / name)
                removed += 1
    return removed
