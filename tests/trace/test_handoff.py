"""Handing a worker's rows to the parent: files of shared memory, private and removed, or bytes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from acp_trace.trace import handoff
from acp_trace.trace.handoff import handoff_directory, pack, unpack

FRAME = pl.DataFrame({"line": [1, 2, 3], "msg": ['{"a":1}', None, "\u00e9\U0001f600"]})


def test_rows_come_back_from_a_private_file_that_is_then_gone(tmp_path: Path) -> None:
    """A packed file is 0600 in a 0700 directory, reads back as the same rows, and is unlinked."""
    with handoff_directory(str(tmp_path)) as directory:
        assert directory is not None and Path(directory).parent == tmp_path
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        packed = pack([FRAME.head(2), FRAME.tail(1)], directory)
        assert isinstance(packed, str)
        assert stat.S_IMODE(os.stat(packed).st_mode) == 0o600
        (frame,) = unpack(packed)
        assert_frame_equal(frame, FRAME)
        assert not os.path.exists(packed)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_removed_with_what_is_left_in_it(tmp_path: Path) -> None:
    """Files never unpacked (a reading that stopped early) go with the directory."""
    with pytest.raises(RuntimeError), handoff_directory(str(tmp_path)) as directory:
        pack([FRAME], directory)
        raise RuntimeError("the reading stopped")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", ["no directory", "write fails", "name taken by a link"])
def test_rows_travel_as_bytes_when_no_file_can_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """No directory, a full disk, or a link where the file would go: the rows come as bytes,
    and nothing is written through the link."""
    directory: str | None = str(tmp_path)
    if case == "no directory":
        directory = None
    if case == "write fails":

        def full(frame: pl.DataFrame, path: str) -> None:
            Path(path).write_bytes(b"partial")
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(handoff, "_write", full)
    if case == "name taken by a link":
        target = tmp_path / "elsewhere"
        monkeypatch.setattr(handoff, "_names", iter([7]))
        (tmp_path / f"{os.getpid()}-7.arrow").symlink_to(target)
    packed = pack([FRAME], directory)
    assert isinstance(packed, bytes)
    assert_frame_equal(unpack(packed)[0], FRAME)
    if case == "write fails":
        assert list(tmp_path.iterdir()) == []
    if case == "name taken by a link":
        assert not (tmp_path / "elsewhere").exists()


def test_no_frames_pack_to_nothing() -> None:
    """An empty result is None, and unpacks to no frame."""
    assert pack([], None) is None
    assert unpack(None) == []


def test_an_unwritable_base_falls_back_to_the_temp_dir(tmp_path: Path) -> None:
    """A base that is missing (no /dev/shm) gives a private directory in the temp dir."""
    with handoff_directory(str(tmp_path / "missing")) as directory:
        assert directory is not None and Path(directory).is_dir()
        assert not str(directory).startswith(str(tmp_path))
    assert not Path(directory).exists()
