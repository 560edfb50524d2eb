"""A Parquet dataset that grows: `acp-trace export --format parquet --dataset DIR`.

    DIR/acp-trace-dataset.json                    what the folder is (schema version, tables)
    DIR/<table>/agent=<agent>/date=<YYYY-MM-DD>/part-<uuid>.parquet
    DIR/_manifest/part-<uuid>.parquet             one row per trace exported

Tables: `records` (the timeline), `replays`, `findings`, `turns`; hive-partitioned by agent
name and the UTC date the recording started (values percent-encoded, a missing one as
`__HIVE_DEFAULT_PARTITION__`, which DuckDB and polars read as null). Every row carries
`trace_id` and `schema_version`. The trace id comes from the header (started_at, pid, command,
cwd: the same recording copied or moved keeps its id) or, without those, from the trace's
content; a trace whose id the manifest already holds is not written again, so exporting the
same traces twice adds nothing. Columns are documented in docs/dataset.md (SCHEMA here).
Files are 0600 and new directories 0700: the records hold message contents.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
import polars as pl

from acp_trace.errors import OutputError
from acp_trace.files import output_dir, replacing
from acp_trace.jsonrpc import json_text
from acp_trace.render.export import portable
from acp_trace.trace.format import started_at

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

SCHEMA_VERSION = 1
TABLES = ("records", "replays", "findings", "turns")
MARKER_FILE = "acp-trace-dataset.json"
MANIFEST = "_manifest"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
KEYS = ("agent", "date")  # the hive partition columns, in path order
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
    """The four tables of an analysis as the dataset stores them (ids and version added);
    credentials in free text replaced (render/scrub.py), as in every export."""
    from acp_trace.render.export import tables as export_tables
    from acp_trace.render.scrub import scrubbed

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
        stored = [c for c in joined.columns if c not in KEYS]  # what a part file holds
        out[name] = joined.select(*stored, *KEYS)  # then the hive columns of its path
    return out


def append(a: Analysis, directory: str | os.PathLike[str]) -> dict[str, int]:
    """Append the traces of `a` that the dataset does not hold yet; rows written per table
    (and `traces`: how many traces were new, `known`: how many it already held)."""
    root = open_dataset(directory)
    ids = trace_ids(a)
    known = _known_ids(root)
    new = ids.filter(~pl.col("trace_id").is_in(sorted(known)))
    written = {"traces": new.height, "known": ids.height - new.height}
    if new.height == 0:
        return written | dict.fromkeys(TABLES, 0)
    batch = uuid.uuid4().hex
    for name, df in dataset_tables(a).items():
        rows = df.filter(pl.col("trace_id").is_in(new["trace_id"].to_list()))
        written[name] = rows.height
        _write_partitions(root / name, rows, batch)
    manifest = new.select(
        "trace_id",
        "trace",
        pl.lit(datetime.now(UTC).isoformat()).alias("exported_at"),
        pl.lit(SCHEMA_VERSION, pl.Int64).alias("schema_version"),
    )
    _write_file(output_dir(root / MANIFEST, inside=root), manifest, batch)
    return written


def open_dataset(directory: str | os.PathLike[str]) -> Path:
    """The dataset folder, created with its marker file when new; an existing folder that is
    not an acp-trace dataset (no marker, and not empty) or of another schema is refused."""
    root = Path(directory)
    marker = root / MARKER_FILE
    if root.is_dir() and any(root.iterdir()) and not marker.is_file():
        raise OutputError(f"{root}: not an acp-trace dataset (no {MARKER_FILE}); name a new folder")
    output_dir(root)
    if marker.is_file():
        version = orjson.loads(marker.read_bytes()).get("schema_version")
        if version != SCHEMA_VERSION:
            raise OutputError(
                f"{root}: a dataset of schema version {version}; this acp-trace writes "
                f"version {SCHEMA_VERSION}"
            )
        return root
    with replacing(marker) as temp:
        temp.write_bytes(orjson.dumps({"schema_version": SCHEMA_VERSION, "tables": list(TABLES)}))
    return root


def _known_ids(root: Path) -> set[str]:
    parts = sorted((root / MANIFEST).glob("*.parquet")) if (root / MANIFEST).is_dir() else []
    if not parts:
        return set()
    return set(pl.scan_parquet(parts).select("trace_id").collect()["trace_id"].to_list())


def _write_partitions(table_dir: Path, rows: pl.DataFrame, batch: str) -> None:
    for (agent, day), group in rows.group_by(list(KEYS), maintain_order=True):
        folder = table_dir / f"agent={_value(agent)}" / f"date={_value(day)}"
        _write_file(output_dir(folder, inside=table_dir.parent), group.drop(list(KEYS)), batch)


def _value(value: Any) -> str:
    return NULL_PARTITION if value is None else quote(str(value), safe="")


def _write_file(folder: Path, df: pl.DataFrame, batch: str) -> None:
    with replacing(folder / f"part-{batch}.parquet") as temp:
        df.write_parquet(temp, statistics=True)
