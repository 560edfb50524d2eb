"""Finding trace files: names, directories (searched recursively by suffix) and globs.

A file named on the command line is `explicit`: if it is not a trace, that is an error. Files
found under a directory or by a glob are candidates: one that is not a trace is skipped with a
note, and the rest is read. A directory search passes over hidden entries (`.*`), virtual
environments (a folder with `pyvenv.cfg`), `node_modules`, `site-packages` and `__pycache__`.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from acp_trace.errors import InputError

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsons", ".log", ".trace")
SKIPPED_DIRS = frozenset({"node_modules", "site-packages", "__pycache__"})
LOOKED_FOR = ", ".join(f"*{s}" for s in TRACE_SUFFIXES)


@dataclass(frozen=True)
class Found:
    """One candidate file, the argument it came from, and whether it was named itself."""

    path: Path
    root: str
    explicit: bool


def find_traces(paths: Iterable[str | os.PathLike[str]]) -> list[Found]:
    """Every candidate trace file of the arguments, in order (each directory sorted).

    InputError for an argument that names nothing, or a directory or glob with no candidate.
    """
    found: list[Found] = []
    for raw in paths:
        text = os.fspath(raw)
        path = Path(text)
        if path.is_dir():
            files = _search(path)
            if not files:
                raise InputError(f"{text}: no trace files (looked for {LOOKED_FOR})")
            found.extend(Found(f, text, explicit=False) for f in files)
        elif path.is_file():
            found.append(Found(path, text, explicit=True))
        elif glob.has_magic(text):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            files = [m for m in matches if m.is_file()]
            if not files:
                raise InputError(f"{text}: the pattern matches no file")
            found.extend(Found(f, text, explicit=False) for f in files)
        elif path.exists():
            raise InputError(f"{text}: not a regular file or a directory")
        else:
            raise InputError(f"{text}: no such file or directory")
    return found


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The candidate files of the arguments (see `find_traces`), as paths."""
    return [f.path for f in find_traces(paths)]


def _search(folder: Path) -> list[Path]:
    """The files with a trace suffix under `folder`, sorted as paths are (part by part),
    passing over what is no trace's. Symbolic links to files count, to directories not (as
    `os.walk` does); a directory that cannot be listed is passed over."""
    found: list[str] = []
    pending = [str(folder)]
    while pending:
        top = pending.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if _is_dir(entry):
                if not _skipped_dir(Path(entry.path)):
                    pending.append(entry.path)
            elif not name.startswith(".") and name.endswith(TRACE_SUFFIXES) and _is_file(entry):
                found.append(entry.path)
    found.sort(key=lambda path: path.split(os.sep))
    return [Path(path) for path in found]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _skipped_dir(path: Path) -> bool:
    name = path.name
    return name.startswith(".") or name in SKIPPED_DIRS or (path / "pyvenv.cfg").is_file()
