"""The files the server may read: the regular files under the folders it serves, and the
files named themselves. Nothing outside a served folder is reached through it: a symbolic
link under a folder (to a file, a folder or anything else) is passed over, never followed,
and so is a device, a pipe or a socket. A folder searched passes over what the CLI passes
over (hidden entries, virtual environments, `node_modules`, ...).

Each file is identified by what identifies one version of it: device, inode, size and
modification time (`Key`); the store keeps its analysis until that changes.
"""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass, field

from acp_trace.trace.paths import SKIPPED_DIRS, TRACE_SUFFIXES

Key = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns

LINK = "a symbolic link: not followed (the server reads only the folder's own files)"
NOT_REGULAR = "not a regular file (a device, pipe or socket): not read"


@dataclass(frozen=True)
class Candidate:
    """A file to read: its path (the trace's name), the argument it came from, its key."""

    path: str
    root: str
    key: Key
    named: bool = False  # named itself: read as named (a link the caller gave is followed)


@dataclass
class Listing:
    """What the served paths hold now: the files to read and those passed over, with why."""

    files: list[Candidate] = field(default_factory=list)
    passed_over: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # arguments that name nothing (now)


def key_of(st: os.stat_result) -> Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def current_key(c: Candidate) -> Key | None:
    """The key of the candidate's file now, when it is still a regular file (itself, unless
    it was named), else None."""
    try:
        st = os.stat(c.path) if c.named else os.lstat(c.path)
    except OSError:
        return None
    return key_of(st) if stat.S_ISREG(st.st_mode) else None


def listing(paths: list[str]) -> Listing:
    """The candidates of the served paths, in order (each folder sorted part by part)."""
    out = Listing()
    for text in paths:
        if os.path.isdir(text):  # a served folder named through a link is that folder
            entries = search(text)
        elif glob.has_magic(text):
            entries = [e for e in sorted(glob.glob(text, recursive=True)) if not os.path.isdir(e)]
        elif os.path.isfile(text):  # a file named itself is read as named
            out.files.append(Candidate(text, text, key_of(os.stat(text)), named=True))
            continue
        else:
            out.missing.append(text)
            continue
        for path in entries:
            add(out, path, text)
    return out


def add(out: Listing, path: str, root: str) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return  # gone since the folder was listed
    if stat.S_ISLNK(st.st_mode):
        out.passed_over.append((path, LINK))
    elif not stat.S_ISREG(st.st_mode):
        out.passed_over.append((path, NOT_REGULAR))
    else:
        out.files.append(Candidate(path, root, key_of(st)))


def search(folder: str) -> list[str]:
    """The entries with a trace suffix under `folder`, links included (to be passed over),
    never descending into a linked folder; sorted as paths are (part by part)."""
    found: list[str] = []
    pending = [folder]
    while pending:
        top = pending.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name not in SKIPPED_DIRS and not os.path.lexists(
                    os.path.join(entry.path, "pyvenv.cfg")
                ):
                    pending.append(entry.path)
            elif name.endswith(TRACE_SUFFIXES):
                found.append(entry.path)
    found.sort(key=lambda path: path.split(os.sep))
    return found
