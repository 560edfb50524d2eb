"""The traces the server answers about: the files its arguments name, read again when they
change (a trace recorded, grown or removed while the server runs is seen on the next call).

Every call lists the files again (`served.listing`: regular files only, no link followed)
and compares each file's key (device, inode, size, modification time) with that of its last
read; only a file whose key changed is read and summarized again (`Store.analyses` counts
those reads), and the analysis of all of them is kept until one changes. Every file's
records go through the redaction `acp-trace export` and `report` use (`redaction/records.py`) as
they are read, so no answer can quote a credential they would not. A file that is no trace
is listed by name only: what it holds is never quoted. Nothing is written anywhere.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from acp_trace.errors import InputError, UsageError
from acp_trace.mcpserver.served import Candidate, Key, current_key, listing
from acp_trace.trace.paths import LOOKED_FOR
from acp_trace.weight import DEFAULT, WeightOptions

if TYPE_CHECKING:
    from acp_trace.analysis import Analysis

NOT_A_TRACE = (
    "not a trace (expected an acp-trace v1 trace or an ACP capture in a known format); "
    "its contents are not quoted"
)
CHANGED = "changed while it was read: read again on the next call"


@dataclass(frozen=True)
class Loaded:
    """One read of the traces: their analysis, a short fingerprint of the files it came from
    (cursors carry it), and each trace's name relative to the folder all of them share."""

    analysis: Analysis
    version: str
    names: dict[str, str]  # trace (as read) -> short name
    summary: pl.DataFrame  # `analysis.summary.summarize` of the traces, kept per file
    passed_over: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    def full_name(self, name: str) -> str | None:
        """The trace a name given by a caller means: its short name, its path as read, or its
        file name; None when it names none."""
        for trace, short in self.names.items():
            if name in (trace, short) or os.path.basename(trace.split("#", 1)[0]) == name:
                return trace
        return None

    def matching(self, patterns: list[str], argument: str) -> list[str]:
        """The traces that any of `patterns` (a name, or a glob on the short name or the path)
        names; UsageError for a pattern that names none, with the names there are."""
        chosen: list[str] = []
        for pattern in patterns:
            exact = self.full_name(pattern)
            found = [exact] if exact else [
                t for t, short in self.names.items()
                if fnmatchcase(short, pattern) or fnmatchcase(t, pattern)
            ]  # fmt: skip
            if not found:
                raise UsageError(f"{argument} {pattern}: no such trace; {self.choices()}")
            chosen += [t for t in found if t not in chosen]
        return chosen

    def choices(self, limit: int = 10) -> str:
        names = list(self.names.values())
        more = f" and {len(names) - limit} more (see list_traces)" if len(names) > limit else ""
        return f"expected one of: {', '.join(names[:limit])}{more}"


@dataclass(frozen=True)
class Part:
    """One file as read: its key then, its records (redacted) and their summary rows."""

    key: Key
    records: pl.DataFrame
    summary: pl.DataFrame


class Store:
    """The traces of `paths` (files, directories, globs), each file read on first use and
    again whenever it changes. Safe to call from several threads (one at a time)."""

    def __init__(
        self,
        paths: list[str],
        *,
        marker_meta: str | None = None,
        fmt: str | None = None,
        hint: str = "",
        weight: WeightOptions = DEFAULT,
    ) -> None:
        self.paths = paths
        self.marker_meta = marker_meta
        self.weight = weight  # the client limits and deadlines (--frame-limit, ...)
        self.fmt = fmt
        self.hint = hint  # added to "no traces" errors (e.g. how to record the first one)
        # one call at a time reads the traces or their (lazily built) analysis; `busy` is
        # held by the server around each tool's answer
        self.busy = threading.RLock()
        self.analyses = 0  # files read and summarized so far (a file again when it changed)
        self._parts: dict[str, Part] = {}
        self._loaded: Loaded | None = None

    def load(self) -> Loaded:
        """The analysis of the traces as they are now (InputError when there are none)."""
        with self.busy:
            found = listing(self.paths)
            passed_over = list(found.passed_over)
            parts: dict[str, Part] = {}
            changed = []
            for c in found.files:
                part = self._parts.get(c.path)
                if part is None or part.key != c.key:
                    changed.append(c)
                else:
                    parts[c.path] = part
            fresh = self._read(changed) if changed else {}
            for c in changed:  # in the listing's order, as read
                if c.path in fresh:
                    parts[c.path] = fresh[c.path]
                else:
                    passed_over.append((c.path, CHANGED))
            parts = {c.path: parts[c.path] for c in found.files if c.path in parts}
            self._parts = parts
            version = fingerprint(parts, passed_over)
            if self._loaded is None or self._loaded.version != version:
                self._loaded = self._combine(parts, passed_over, version, found.missing)
            return self._loaded

    def _read(self, changed: list[Candidate]) -> dict[str, Part]:
        """The files read (in one pass), redacted and summarized, each as its Part; a file
        that changed while it was read (or became a link) is left out: its records are not
        kept, and the next call reads it again."""
        from acp_trace.analysis.summary import summarize
        from acp_trace.redaction.records import scrub_records
        from acp_trace.trace.paths import Found
        from acp_trace.trace.reader import read_found

        found = [Found(Path(c.path), c.root, explicit=False) for c in changed]
        records = read_found(found, fmt=self.fmt)
        skipped = pl.col("kind") == "skipped"
        records = scrub_records(
            records.with_columns(
                pl.when(skipped).then(pl.lit(NOT_A_TRACE)).otherwise(pl.col("event")).alias("event")
            )
        )
        names = {str(f.path): c for f, c in zip(found, changed, strict=True)}
        rows, summaries = by_file(records, names), by_file(summarize(records), names)
        out = {}
        for name, c in names.items():
            if name in rows and current_key(c) == c.key:
                out[c.path] = Part(c.key, rows[name], summaries.get(name, no_summary()))
        self.analyses += len(out)
        return out

    def _combine(
        self,
        parts: dict[str, Part],
        passed_over: list[tuple[str, str]],
        version: str,
        missing: list[str],
    ) -> Loaded:
        from acp_trace.analysis import Analysis
        from acp_trace.render.report.context import relative_names

        frames = [p.records for p in parts.values()]
        records = pl.concat(frames, how="vertical_relaxed") if frames else None
        if records is None or records.filter(pl.col("kind") != "skipped").is_empty():
            where = ", ".join(self.paths)
            not_traces = len(passed_over) + (0 if records is None else records.height)
            also = f"; {not_traces} files there are no trace" if not_traces else ""
            gone = f"; {', '.join(missing)}: no such file or directory" if missing else ""
            raise InputError(f"{where}: no traces (looked for {LOOKED_FOR}){also}{gone}{self.hint}")
        summary = pl.concat([p.summary for p in parts.values()], how="vertical_relaxed")
        traces = records["trace"].unique(maintain_order=True).to_list()
        short = relative_names(traces + [p for p, _why in passed_over])
        names = {t: short[t] for t in traces}
        analysis = Analysis(records, marker_meta=self.marker_meta, weight=self.weight)
        return Loaded(analysis, version, names, summary, [(short[p], w) for p, w in passed_over])


def by_file(table: pl.DataFrame, files: dict[str, Candidate]) -> dict[str, pl.DataFrame]:
    """The rows of `table` per file read: a trace is named by its file, or `FILE#N` for the
    Nth trace in one file."""
    if table.is_empty():
        return {}
    traces = table["trace"].unique().to_list()
    owner = {t: t if t in files else t.rsplit("#", 1)[0] for t in traces}
    keyed = table.with_columns(pl.col("trace").replace_strict(owner).alias("_file"))
    parts = keyed.partition_by("_file", as_dict=True, include_key=False, maintain_order=True)
    return {str(k[0]): v for k, v in parts.items()}


def no_summary() -> pl.DataFrame:
    """The summary of a file with no trace (every row `skipped`): no row."""
    from acp_trace.analysis.summary import SUMMARY_SCHEMA

    return pl.DataFrame(schema=SUMMARY_SCHEMA)


def fingerprint(parts: dict[str, Part], passed_over: list[tuple[str, str]]) -> str:
    """12 hex digits that change when a file is added, removed, replaced or written to."""
    digest = hashlib.blake2b(digest_size=6)
    for path, part in parts.items():
        digest.update(os.fsencode(path) + "".join(f"\0{n}" for n in part.key).encode() + b"\n")
    for path, why in passed_over:
        digest.update(os.fsencode(path) + b"\0" + why.encode() + b"\n")
    return digest.hexdigest()
