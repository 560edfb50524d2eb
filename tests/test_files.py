"""Safe output writing: atomic, never through a planted symlink, private whatever the umask."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_trace.errors import OutputError
from acp_trace.files import (
    check_directory_target,
    check_file_target,
    check_not_inputs,
    descriptor,
    fitting_name,
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
        (
            "socket",
            "s",
            "expected a regular file, a character device or a FIFO for the output, found a socket",
        ),
        ("devlink", "null", "a symbolic link to a device or pipe"),
    ],
)
def test_a_file_target_of_the_wrong_kind_is_refused(
    tmp_path: Path, make: str, name: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory, a name ending in /, a missing parent, a socket or a link to a device is
    one OutputError naming the path."""
    monkeypatch.chdir(tmp_path)  # a socket's path must be short
    if make == "dir":
        (tmp_path / name).mkdir()
    elif make == "file":
        (tmp_path / "f").write_text("x")
    elif make == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(name)
        listener.close()
    elif make == "devlink":
        (tmp_path / name).symlink_to("/dev/null")
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


def test_output_dir_is_private_and_only_its_last_part_is_made(
    tmp_path: Path, loose_umask: None
) -> None:
    """A new output directory is 0700; a missing parent is refused (never `mkdir -p` up to the
    root) and nothing is made; an existing file is refused."""
    with pytest.raises(OutputError, match=r"a/b: the directory .*/a does not exist"):
        output_dir(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()
    out = output_dir(tmp_path / "a")
    assert _mode(out) == 0o700
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


def test_inside_makes_the_levels_below_a_directory_of_ours(tmp_path: Path) -> None:
    """`output_dir(..., inside=ROOT)` makes every missing level under ROOT (a dataset's
    partitions), 0700, and none above it."""
    root = output_dir(tmp_path / "ds")
    deep = output_dir(root / "t" / "agent=a" / "date=d", inside=root)
    assert deep.is_dir() and {_mode(p) for p in (deep, deep.parent, deep.parent.parent)} == {0o700}


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    """A FIFO at the target is opened and written to; it is still a FIFO afterwards."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_file(fifo, b"through the pipe")
    reader.join(timeout=60)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_character_device_is_written_to_not_replaced(tmp_path: Path) -> None:
    """/dev/null takes the output and stays a character device; a replacing writer would
    need to create a file in /dev."""
    write_file("/dev/null", b"gone")
    with replacing("/dev/null") as temp:
        temp.write_bytes(b"gone too")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


@pytest.mark.parametrize(
    "name", ["/dev/fd/{fd}", "/proc/self/fd/{fd}"], ids=["dev-fd", "proc-self-fd"]
)
def test_a_descriptor_name_is_written_to_that_descriptor(name: str) -> None:
    """/dev/fd/N and /proc/self/fd/N are the open descriptor N: the bytes go into the pipe."""
    read_end, write_end = os.pipe()
    try:
        check_file_target(name.format(fd=write_end))
        write_file(name.format(fd=write_end), b"into the pipe")
        assert os.read(read_end, 100) == b"into the pipe"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_standard_names_are_descriptors() -> None:
    """`-` and /dev/stdout are fd 1, /dev/stderr fd 2, other paths none."""
    assert [descriptor(n) for n in ("-", "/dev/stdout", "/dev/stderr", "/dev/fd/7", "x")] == [
        1,
        1,
        2,
        7,
        None,
    ]


def test_a_descriptor_that_is_not_open_for_writing_is_refused() -> None:
    """A closed descriptor, or one open only for reading, is one OutputError."""
    read_end, write_end = os.pipe()
    os.close(write_end)
    try:
        with pytest.raises(OutputError, match=f"descriptor {read_end} is not open for writing"):
            check_file_target(f"/dev/fd/{read_end}")
        with pytest.raises(OutputError, match=f"descriptor {write_end} is not open$"):
            check_file_target(f"/dev/fd/{write_end}")
    finally:
        os.close(read_end)


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    """The same file by inode: its own name, another spelling, a hard link or a symlink."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("{}\n")
    os.link(trace, tmp_path / "hard.jsonl")
    (tmp_path / "soft.jsonl").symlink_to(trace)
    for out in ("t.jsonl", "./t.jsonl", "hard.jsonl", "soft.jsonl"):
        with pytest.raises(OutputError, match=r": is the input .*t\.jsonl; the output would"):
            check_not_inputs([tmp_path / out], [trace])
    check_not_inputs([tmp_path / "new.json", "/dev/null"], [trace])  # not an input
    assert trace.read_text() == "{}\n"


def test_a_name_too_long_is_one_line(tmp_path: Path) -> None:
    """A name past the file system's limit is an OutputError of one line, the name shortened."""
    long = tmp_path / ("a" * 300 + ".json")
    for attempt in (lambda: check_file_target(long), lambda: write_file(long, "x")):
        with pytest.raises(OutputError) as caught:
            attempt()
        message = str(caught.value)
        assert "\n" not in message and "the name is too long for the file system" in message
        assert "a part of 305 bytes; a file name may hold 255 bytes" in message
        assert len(message) < 250


def test_a_name_that_fits_can_be_written_whatever_its_length(tmp_path: Path) -> None:
    """A 255-byte name is written: the temporary file beside it has a short name."""
    target = write_file(tmp_path / ("b" * 250 + ".json"), "x")
    assert target.read_text() == "x"


@pytest.mark.parametrize("stem", ["c" * 300, "é" * 200, "short"])
def test_fitting_name_keeps_a_derived_name_within_the_limit(stem: str) -> None:
    """A name made from a source (a long connection id) is cut to 255 bytes, on a whole
    character, with a hash that keeps two long names apart; a short one is kept."""
    name = fitting_name(stem, ".jsonl")
    assert len(os.fsencode(name)) <= 255 and name.endswith(".jsonl")
    assert name == f"{stem}.jsonl" or fitting_name(stem + "x", ".jsonl") != name
