"""Finding trace files: names, directories (searched recursively by suffix) and globs."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

from acp_trace.errors import InputError

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsons", ".log", ".trace")


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files named, files under directories (by suffix, recursively) and glob matches, in order."""
    found: list[Path] = []
    for raw in paths:
        text = os.fspath(raw)
        path = Path(text)
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TRACE_SUFFIXES)
            )
        elif path.is_file():
            found.append(path)
        elif glob.has_magic(text):
            matches = sorted(Path(m) for m in glob.glob(text, recursive=True))
            found.extend(m for m in matches if m.is_file())
            if not matches:
                raise InputError(f"{text}: the pattern matches no file")
        else:
            raise InputError(f"{text}: no such file or directory")
    return found
