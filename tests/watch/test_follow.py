"""Following a trace file as it grows: whole new lines only, a cut line waited for, a truncated
or replaced file read again, new files in a folder found, the file never opened for writing."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from acp_trace.errors import InputError
from acp_trace.watch.follow import Folder, Follower, check_roots


def test_new_lines_only_and_a_half_written_line_waits(tmp_path: Path) -> None:
    """Each poll gives the lines completed since the last one; a line without its newline yet
    is held until the newline comes."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntw")
    f = Follower(path)
    assert f.poll().lines == [b"one"]
    assert f.pending()
    assert f.poll().lines == []
    with path.open("ab") as out:
        out.write(b"o\nthree\n")
    assert f.poll().lines == [b"two", b"three"]
    assert f.poll().lines == []
    f.close()


def test_a_truncated_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    """A file that shrank starts again: its lines come from the first, and the poll says so."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\nb\nc\n")
    f = Follower(path)
    assert len(f.poll().lines) == 3
    path.write_bytes(b"x\n")
    polled = f.poll()
    assert polled.reopened == "truncated"
    assert polled.lines == [b"x"]
    f.close()


def test_a_replaced_file_is_reopened(tmp_path: Path) -> None:
    """A new file renamed over the old name is a new trace: read from its start."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"old 1\nold 2\n")
    f = Follower(path)
    assert f.poll().lines == [b"old 1", b"old 2"]
    new = tmp_path / "new.tmp"
    new.write_bytes(b"new 1\nnew 2\nnew 3\n")
    new.rename(path)
    polled = f.poll()
    assert polled.reopened == "replaced"
    assert polled.lines == [b"new 1", b"new 2", b"new 3"]
    f.close()


def test_the_file_is_opened_read_only_and_never_locked(tmp_path: Path) -> None:
    """The tap's file is opened for reading only, and holds no lock a writer would meet."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\n")
    f = Follower(path)
    f.poll()
    assert f.fd is not None
    assert fcntl.fcntl(f.fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    with path.open("ab") as writer:  # an exclusive lock is still free for a writer
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(writer.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    f.close()


def test_a_removed_file_is_gone_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    f = Follower(path)
    assert f.poll().gone
    path.write_bytes(b"a\n")
    assert f.poll().lines == [b"a"]
    f.close()


def test_traces_that_appear_in_a_folder_join(tmp_path: Path) -> None:
    """A folder is looked at again each time: files that appear in it are new, once."""
    folder = Folder([str(tmp_path)])
    assert folder.new_files() == []
    (tmp_path / "a.jsonl").write_bytes(b"")
    assert [p.name for p in folder.new_files()] == ["a.jsonl"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(b"")
    assert [p.name for p in folder.new_files()] == ["b.jsonl"]
    assert folder.new_files() == []


def test_a_root_that_is_nothing_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nowhere: no such directory \(expected a trace file"):
        check_roots([str(tmp_path / "nowhere")])
    assert check_roots([str(tmp_path)]) == [str(tmp_path)]


def test_old_traces_already_in_a_folder_are_not_read_again(tmp_path: Path) -> None:
    """A trace in the folder since long before the watch is passed over; a recent one and a
    file named itself are followed."""
    old, recent = tmp_path / "old.jsonl", tmp_path / "recent.jsonl"
    old.write_bytes(b"")
    recent.write_bytes(b"")
    os.utime(old, (1_000_000_000, 1_000_000_000))
    assert [p.name for p in Folder([str(tmp_path)]).new_files()] == ["recent.jsonl"]
    assert [p.name for p in Folder([str(old)]).new_files()] == ["old.jsonl"]
