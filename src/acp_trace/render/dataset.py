"""A Parquet dataset that grows, each trace's rows exactly once: `export --format parquet --dataset`.

    DIR/acp-trace-dataset.json                     what the folder is (schema version, tables)
    DIR/<table>/agent_key=<key>/day=<YYYY-MM-DD>/<trace_id>-v3.parquet   one trace's rows
    DIR/<table>/agent_key=<key>/day=<YYYY-MM-DD>/compact-<hash>-v3.parquet  after `compact`
    DIR/_traces/<id[:2]>/<trace_id>.json           where the trace's files go (its claim)
    DIR/_traces/<id[:2]>/<trace_id>.done           every file of the trace is in place
    DIR/_lock                                      exports share it, `compact` holds it alone

Tables: `records` (the timeline), `replays`, `findings`, `turns`. Every row carries `trace_id`,
`schema_version`, and the true `agent` and `date`; the folder names are only for pruning:
`agent_key` is a bounded, file-system-safe and never numeric form of the agent's name (a
slug and a hash, render/dataset_keys.py), `day` the UTC day the recording started.

Exactly once: a trace's files are named after its id (render/dataset_store.py writes each
under a hidden name and links it into place, never replacing one that exists), the records
file last, then `.done`. Exporting a trace whose `.done` exists writes nothing; an export that
died (or ran at the same time as another, or is a retry) converges on the same files. A trace
whose files cannot be written is named in the result; the others are written.
Files are 0600 and new directories 0700: the records hold message contents.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from acp_trace.errors import AcpTraceError, OutputError
from acp_trace.files import check_directory_target, output_dir
from acp_trace.jsonrpc import json_text
from acp_trace.render.dataset_keys import agent_key, day_key
from acp_trace.render.dataset_store import Staged, Store
from acp_trace.render.export import portable
from acp_trace.trace.format import started_at

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

# 3: the replays table's fidelity fields (rules.md "Replay fidelity"); 4: its weight fields
SCHEMA_VERSION = 4
TABLES = ("records", "replays", "findings", "turns")
WRITE_ORDER = ("replays", "findings", "turns", "records")  # records last: the trace's commit
MARKER_FILE = "acp-trace-dataset.json"
TRACES = "_traces"
KEYS = ("agent", "date")  # stored in every row; the folders hold agent_key and day
CHUNK = 1000  # traces staged, flushed and committed together
DROPPED = {"records": ("row", "peer_row")}  # positions in one export's table: meaningless later


def trace_ids(a: Analysis) -> pl.DataFrame:
    """Per trace of an analysis: `trace_id`, `agent`, `date` (UTC day the recording started)."""
    agents = dict(a.timeline.select("trace", "agent").unique("trace").iter_rows())
    skipped = set(a.records.filter(pl.col("kind") == "skipped")["trace"].to_list())
    rows = []
    for trace, head in a.headers.items():
        if trace in skipped:
            continue
        started = head.get("started_at")
        rows.append((trace, _trace_id(a, trace, head), agents.get(trace), _day(started)))
    return pl.DataFrame(
        rows,
        schema={"trace": pl.String, "trace_id": pl.String, "agent": pl.String, "date": pl.Date},
        orient="row",
    )


def _trace_id(a: Analysis, trace: str, head: dict[str, Any]) -> str:
    if head.get("started_at") and head.get("pid") is not None:
        basis = [head.get(k) for k in ("started_at", "pid", "command", "cwd")]
        data = json_text(basis).encode()  # integers beyond 64 bits too
    else:  # an import or a hand-written trace: its content names it
        part = a.records.filter(pl.col("trace") == trace)
        data = b"\n".join(
            (m or t or "").encode("utf-8", "surrogatepass")
            for m, t in part.select("msg", "text").iter_rows()
        )
    return hashlib.sha256(data).hexdigest()[:32]


def _day(started: Any) -> Any:
    when = started_at(started)
    return None if when is None else when.date()


def dataset_tables(a: Analysis) -> dict[str, pl.DataFrame]:
    """The four tables of an analysis as the dataset stores them (ids, version, agent and
    date added); credentials in free text replaced (export.scrubbed), as in every export."""
    from acp_trace.render.export import scrubbed
    from acp_trace.render.export import tables as export_tables

    a = scrubbed(a)
    base = export_tables(a) | {"turns": portable(a.turns)}
    peer_seq = pl.col("seq").gather(pl.col("peer_row").fill_null(0))
    base["records"] = base["records"].with_columns(
        pl.when(pl.col("peer_row").is_not_null()).then(peer_seq).alias("peer_seq")
    )
    ids = trace_ids(a)
    out = {}
    for name in TABLES:
        df = base[name].drop([c for c in DROPPED.get(name, ()) if c in base[name].columns])
        df = df.drop([k for k in KEYS if k in df.columns])
        joined = df.join(ids, on="trace", how="left", maintain_order="left").with_columns(
            pl.lit(SCHEMA_VERSION, pl.Int64).alias("schema_version")
        )
        out[name] = joined.select(*[c for c in joined.columns if c not in KEYS], *KEYS)
    return out


@dataclass
class Appended:
    """What an append did: traces written (`new`), already there (`known`), rows written per
    table, and the traces that could not be written with the reason."""

    new: int = 0
    known: int = 0
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    failed: list[tuple[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"traces": self.new, "known": self.known} | self.rows


def file_name(trace_id: str) -> str:
    """The file that holds one trace's rows of a table."""
    return f"{trace_id}-v{SCHEMA_VERSION}.parquet"


def append(a: Analysis, directory: str | os.PathLike[str]) -> Appended:
    """Write the traces of `a` that the dataset does not hold yet, each exactly once (a copy
    of a trace, with the same id, is the same trace: its first path is kept).

    Order, for a crash at any point (and a power cut), CHUNK traces at a time: each trace's
    claim, then its data files under temporary names; the file system flushed (syncfs); the
    files linked to their names, records last; their folders fsynced; only then each
    trace's `.done`, whose folders are fsynced last."""
    ids = trace_ids(a).unique("trace_id", keep="first", maintain_order=True)
    result = Appended()
    with open_dataset(directory) as store, store.lock(exclusive=False):
        todo = []
        for row in ids.iter_rows():
            if store.exists(_marks(row[1]), f"{row[1]}.done"):
                result.known += 1
            else:
                todo.append(row)
        if not todo:
            return result
        tables = dataset_tables(a)
        by_trace = {
            name: {key[0]: rows for key, rows in df.partition_by("trace", as_dict=True).items()}
            for name, df in tables.items()
        }
        for start in range(0, len(todo), CHUNK):
            _append_chunk(store, by_trace, todo[start : start + CHUNK], result)
    return result


def _append_chunk(
    store: Store,
    by_trace: dict[str, dict[Any, pl.DataFrame]],
    todo: list[tuple[Any, ...]],
    result: Appended,
) -> None:
    staged: dict[str, tuple[str, list[tuple[Staged, int]]]] = {}
    for trace, trace_id, agent, day in todo:
        try:
            staged[trace_id] = (trace, _stage_trace(store, by_trace, trace, trace_id, agent, day))
        except (OSError, AcpTraceError) as exc:
            result.failed.append((trace, str(exc)))
    store.flush()
    folders: set[tuple[str, ...]] = set()
    written = []
    for trace_id, (trace, files) in staged.items():
        try:
            for file, height in files:
                if store.commit(file):
                    result.rows[file.folder[0]] += height
                folders.add(file.folder)
            written.append(trace_id)
        except (OSError, AcpTraceError) as exc:
            result.failed.append((trace, str(exc)))
        finally:
            for file, _height in files:
                store.discard(file)
    store.sync(folders)
    for trace_id in written:
        made = store.write_once(
            _marks(trace_id), f"{trace_id}.done", _empty, durable=False, sync_folder=False
        )
        result.new += made
        result.known += not made  # a concurrent export finished it first
    store.sync({_marks(t) for t in written})


def _marks(trace_id: str) -> tuple[str, str]:
    return (TRACES, trace_id[:2])


def _empty(_handle: Any) -> None:
    """A `.done` file holds nothing: its name says it."""


def _stage_trace(
    store: Store,
    by_trace: dict[str, dict[Any, pl.DataFrame]],
    trace: str,
    trace_id: str,
    agent: str | None,
    day: Any,
) -> list[tuple[Staged, int]]:
    """One trace's claim (where its files go: the first export's choice) and its data files
    staged, records last; with their row counts."""
    marks = _marks(trace_id)
    ours = {"agent_key": agent_key(agent), "day": day_key(day)}
    claim = orjson.dumps(ours)
    store.write_once(  # not fsynced: one cut by a power loss reads as no claim
        marks, f"{trace_id}.json", lambda f: f.write(claim), durable=False, sync_folder=False
    )
    where = _claim(store.read(marks, f"{trace_id}.json")) or ours
    folder = (f"agent_key={where['agent_key']}", f"day={where['day']}")
    files = []
    try:
        for name in WRITE_ORDER:
            part = by_trace[name].get(trace)
            if part is not None and part.height:
                file = store.stage((name, *folder), file_name(trace_id), part.write_parquet)
                if file is not None:
                    files.append((file, part.height))
    except BaseException:
        for file, _height in files:
            store.discard(file)
        raise
    return files


def _claim(data: bytes | None) -> dict[str, str] | None:
    """A claim's partition keys; None when missing or unreadable (cut by a power loss)."""
    try:
        value = orjson.loads(data or b"")
    except orjson.JSONDecodeError:
        return None
    keys = ("agent_key", "day")
    if isinstance(value, dict) and all(isinstance(value.get(k), str) for k in keys):
        return {k: value[k] for k in keys}
    return None


def open_dataset(directory: str | os.PathLike[str]) -> Store:
    """The dataset folder, created with its marker file when new; an existing folder that is
    not an acp-trace dataset (no marker, and not empty) or of another schema is refused."""
    root = Path(directory)
    marker = root / MARKER_FILE
    if root.is_dir() and not root.is_symlink() and any(root.iterdir()) and not marker.exists():
        raise OutputError(f"{root}: not an acp-trace dataset (no {MARKER_FILE}); name a new folder")
    check_directory_target(root)
    output_dir(root)
    store = Store(root)
    try:
        data = store.read((), MARKER_FILE)
        if data is None:
            about = {"schema_version": SCHEMA_VERSION, "tables": list(TABLES)}
            store.write_once((), MARKER_FILE, lambda f: f.write(orjson.dumps(about)))
            data = store.read((), MARKER_FILE) or b"{}"
        version = orjson.loads(data).get("schema_version")
        if version != SCHEMA_VERSION:
            raise OutputError(
                f"{root}: a dataset of schema version {version}; this acp-trace writes "
                f"version {SCHEMA_VERSION} (export into a new folder)"
            )
    except BaseException:
        store.close()
        raise
    return store
