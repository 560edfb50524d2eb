"""What an output may replace: only what the same command made (docs/outputs.md).

An output never destroys a recording or a file another command wrote:

- a file (`import -o t.jsonl`, `export --format perfetto -o t.json`) may replace only an empty
  file or one its own command wrote, told by the file itself (`check_file`: the writer's
  `made` test, e.g. an imported trace's header says `"recorder": "acp-trace X import"`);
- a folder of files (`export --format csv -o out/`) may replace only the files the folder's
  manifest, `.acp-trace-outputs.json`, lists as that command's (`check_folder`, `record`);
- a folder written whole (`report -o DIR`) must be new, empty, or one the same command wrote
  and nothing else since; it is built in a private folder beside it and renamed into place
  (`building`), so an interruption leaves the old folder or the new one, never half of one;
- an output folder that is one of the inputs, or holds one, is refused.

Each is checked before any input is read, and refused with one `OutputError` that says what
was expected, what was found, and where. Imports nothing of acp_trace but `errors`, `files`
and `quantities`.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import orjson

from acp_trace.errors import OutputError
from acp_trace.files import PRIVATE_DIR, Target, check_directory_target, descriptor, failure
from acp_trace.files import write_file as _write_file
from acp_trace.quantities import count

MANIFEST = ".acp-trace-outputs.json"
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def check_file(target: Target, writer: str, made: Callable[[Path], bool]) -> None:
    """Refuse a file output whose target exists, holds something, and was not made by
    `writer` (`made(path)` says whether it was). Streams, links and missing files pass (a
    link is replaced, never followed: what it points to is not touched)."""
    text = os.fspath(target)
    if descriptor(text) is not None:
        return
    try:
        status = os.lstat(text)
    except OSError:
        return
    if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
        return
    path = Path(text)
    if _made(made, path):
        return
    raise OutputError(
        f"{text}: expected a new file or one `acp-trace {writer}` wrote, found "
        f"{_describe(path, status.st_size)}; it would be replaced (choose another -o, or "
        "remove it first)"
    )


def check_folder(
    target: Target, writer: str, names: Iterable[str], inputs: Iterable[Target], *, whole: bool
) -> None:
    """Refuse a folder output that is an input or holds one; with `whole` (the folder is
    replaced as a whole) an existing folder that holds anything `writer` did not write; else
    any of `names` present in it that `writer` did not write (its manifest says who did)."""
    check_directory_target(target)
    text = os.fspath(target)
    folder = Path(text.rstrip("/" + os.sep) or text)
    _check_no_input(text, folder, inputs)
    if not folder.is_dir():
        return
    owners = manifest(folder)
    present = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST)
    considered = present if whole else [n for n in names if n in present]
    foreign = [n for n in considered if owners.get(n) != writer]
    if not foreign:
        return
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    expected = (
        f"a new or empty folder, or one `acp-trace {writer}` wrote"
        if whole
        else f"no file of these names ({', '.join(names)}) but those `acp-trace {writer}` wrote"
    )
    why = f"{MANIFEST} lists them as another command's" if owners else f"it has no {MANIFEST}"
    raise OutputError(
        f"{text}: expected {expected}, found {shown} that it did not write ({why}); they "
        "would be replaced (choose another -o)"
    )


def manifest(folder: Path) -> dict[str, str]:
    """The manifest of `folder`: each file acp-trace wrote there and the command that did."""
    try:
        doc = orjson.loads((folder / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def record(folder: Path, names: Iterable[str], writer: str) -> None:
    """Add `names` to `folder`'s manifest as written by `writer` (written atomically, 0600)."""
    owners = manifest(folder)
    owners.update(dict.fromkeys(names, writer))
    doc = {"acp_trace_outputs": 1, "files": dict(sorted(owners.items()))}
    _write_file(folder / MANIFEST, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


@contextmanager
def building(target: Target, writer: str) -> Iterator[Path]:
    """A private folder beside `target` to write a whole output into; on success its files
    go into the manifest and it replaces `target` (renamed into place, the old folder then
    removed); on any failure, Ctrl-C or SIGTERM it is removed and `target` is as it was."""
    check_folder(target, writer, [], [], whole=True)  # also for callers of the library
    final = _place(target)
    try:
        temp = Path(tempfile.mkdtemp(prefix=f".acp-trace-{writer}-", dir=final.parent))
        os.chmod(temp, PRIVATE_DIR)
    except OSError as exc:
        raise failure(final, exc, f"cannot write in {final.parent}") from exc
    try:
        yield temp
        record(temp, [p.name for p in temp.iterdir() if p.name != MANIFEST], writer)
        _swap(temp, final)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _swap(temp: Path, final: Path) -> None:
    """Rename `temp` to `final`, an existing `final` moved aside first and removed after; no
    signal is taken in between (it waits until the new folder is in place)."""
    old = None
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        if final.is_dir() and any(final.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=".acp-trace-old-", dir=final.parent))
            os.replace(final, old)  # onto the empty folder just made
        os.replace(temp, final)  # a missing or empty `final` is replaced
    except OSError as exc:
        if old is not None and not final.exists():
            with suppress(OSError):
                os.replace(old, final)
        raise failure(final, exc, "cannot put the new folder in place") from exc
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _place(target: Target) -> Path:
    """The folder to replace: `target`, or where it points when it is a link to a folder
    (used like `cd` would)."""
    text = os.fspath(target)
    bare = Path(text.rstrip("/" + os.sep) or text)
    return Path(os.path.realpath(bare)) if bare.is_symlink() else bare.absolute()


def _check_no_input(text: str, folder: Path, inputs: Iterable[Target]) -> None:
    where = os.path.realpath(folder)
    for source in inputs:
        real = os.path.realpath(source)
        if real == where or real.startswith(where.rstrip(os.sep) + os.sep):
            what = "is the input" if real == where else "holds the input"
            raise OutputError(
                f"{text}: expected a folder that holds no input, found that it {what} "
                f"{os.fspath(source)}; the output would destroy it (choose another -o)"
            )


def _made(made: Callable[[Path], bool], path: Path) -> bool:
    try:
        return made(path)
    except (OSError, ValueError):
        return False


def _describe(path: Path, size: int) -> str:
    """What a file is, for a message: a recording names its recorder."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(1 << 16)
        head = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        head = None
    if isinstance(head, dict) and head.get("kind") == "header":
        recorder = head.get("recorder")
        return f"a trace recorded by {recorder}" if isinstance(recorder, str) else "a trace"
    return f"a file of {count(size)} bytes"
