"""Safe output writing: atomic, never through a planted symlink, private whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_trace.errors import OutputError
from acp_trace.files import (
    check_directory_target,
    check_file_target,
    output_dir,
    replacing,
    wants_directory,
    write_file,
)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would make new files world-readable."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_file_is_0600_whatever_the_umask(tmp_path: Path, loose_umask: None) -> None:
    """write_file gives 0600 under umask 000 (a chart too) and leaves no temporary file."""
    target = write_file(tmp_path / "report.md", "hello")
    chart = write_file(tmp_path / "gap.png", b"png")
    assert target.read_text() == "hello" and _mode(target) == _mode(chart) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["gap.png", "report.md"]


def test_a_symlink_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    """A link planted at the output path is replaced; the file it points to is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out.md"
    link.symlink_to(victim)
    write_file(link, "report")
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "report"


def test_rewriting_the_same_file_works(tmp_path: Path) -> None:
    """Writing a report into the same place twice replaces it."""
    write_file(tmp_path / "r.md", "one")
    write_file(tmp_path / "r.md", "two")
    assert (tmp_path / "r.md").read_text() == "two"


@pytest.mark.parametrize(
    ("make", "name", "message"),
    [
        ("dir", "out", "expected a file for the output, found a directory"),
        ("none", "out/", "expected a file name for the output, found a directory name"),
        ("none", "missing/x.png", "the directory .*/missing does not exist"),
        ("file", "f/x.png", "f is a file, not a directory"),
        ("fifo", "pipe", "expected a regular file for the output"),
    ],
)
def test_a_file_target_of_the_wrong_kind_is_refused(
    tmp_path: Path, make: str, name: str, message: str
) -> None:
    """A directory, a name ending in / or a missing parent is one OutputError naming the path."""
    if make == "dir":
        (tmp_path / name).mkdir()
    elif make == "file":
        (tmp_path / "f").write_text("x")
    elif make == "fifo":
        os.mkfifo(tmp_path / name)
    with pytest.raises(OutputError, match=message):
        check_file_target(f"{tmp_path}/{name}")  # before any work
    with pytest.raises(OutputError, match=message):
        write_file(f"{tmp_path}/{name}", "x")


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    """When the writer fails, the temporary file is removed and the target is not created."""
    with pytest.raises(RuntimeError), replacing(tmp_path / "t.parquet") as temp:
        temp.write_bytes(b"half")
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_output_dir_is_private_with_its_parents(tmp_path: Path, loose_umask: None) -> None:
    """A new output directory and its new parents are 0700; an existing file is refused."""
    out = output_dir(tmp_path / "a" / "b")
    assert _mode(out) == 0o700 and _mode(tmp_path / "a") == 0o700
    (tmp_path / "README.md").write_text("x")
    with pytest.raises(OutputError, match="expected a directory for the output, found a file"):
        output_dir(tmp_path / "README.md")
    with pytest.raises(OutputError, match=r"README.md/: expected a directory"):
        check_directory_target(f"{tmp_path}/README.md/")  # the name as given, slash and all


@pytest.mark.parametrize(("name", "expected"), [("out/", True), ("out", False), (".", True)])
def test_wants_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, expected: bool
) -> None:
    """A trailing / or an existing directory means a directory."""
    monkeypatch.chdir(tmp_path)
    assert wants_directory(name) is expected
