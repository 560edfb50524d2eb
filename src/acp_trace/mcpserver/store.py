"""The traces the server answers about: the files its arguments name, read again when they
change (a trace recorded, grown or removed while the server runs is seen on the next call).

Every call lists the files again (`find_traces`: a directory walk) and compares their size,
modification time and inode with those of the last read; only a change costs a new analysis.
Nothing is written anywhere: the analysis lives in memory.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from acp_trace.errors import InputError, UsageError
from acp_trace.trace.paths import find_traces

if TYPE_CHECKING:
    from acp_trace.analysis import Analysis


@dataclass(frozen=True)
class Loaded:
    """One read of the traces: their analysis, a short fingerprint of the files it came from
    (cursors carry it), and each trace's name relative to the folder all of them share."""

    analysis: Analysis
    version: str
    names: dict[str, str]  # trace (as read) -> short name

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


class Store:
    """The traces of `paths` (files, directories, globs), analyzed on first use and again
    whenever the files change. Safe to call from several threads (one at a time)."""

    def __init__(
        self,
        paths: list[str],
        *,
        marker_meta: str | None = None,
        fmt: str | None = None,
        hint: str = "",
    ) -> None:
        self.paths = paths
        self.marker_meta = marker_meta
        self.fmt = fmt
        self.hint = hint  # added to "no traces" errors (e.g. how to record the first one)
        # one call at a time reads the traces or their (lazily built) analysis; `busy` is
        # held by the server around each tool's answer
        self.busy = threading.RLock()
        self._loaded: Loaded | None = None

    def load(self) -> Loaded:
        """The analysis of the traces as they are now (InputError when there are none)."""
        with self.busy:
            try:
                found = find_traces(self.paths)
            except InputError as exc:
                raise InputError(f"{exc}{self.hint}") from exc
            files = [f.path for f in found]
            version = fingerprint(files)
            if self._loaded is None or self._loaded.version != version:
                self._loaded = self._read(version)
            return self._loaded

    def _read(self, version: str) -> Loaded:
        """The analysis of the paths as given: a file found in a folder that is no trace is
        skipped (and listed), as the CLI does."""
        from acp_trace.analysis import analyze
        from acp_trace.render.report.context import relative_names

        a = analyze(self.paths, marker_meta=self.marker_meta, fmt=self.fmt)
        traces = a.records["trace"].unique(maintain_order=True).to_list()
        return Loaded(a, version, relative_names(traces))


def fingerprint(files: list[Path]) -> str:
    """12 hex digits that change when a file is added, removed, replaced or written to."""
    digest = hashlib.blake2b(digest_size=6)
    for path in files:
        try:
            st = os.stat(path)
            stamp = f"\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n"
        except OSError:
            stamp = "\0gone\n"
        digest.update(os.fsencode(path) + stamp.encode())
    return digest.hexdigest()
