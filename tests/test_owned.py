"""owned.py: what an output may replace, and a folder written whole or not at all."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from acp_trace.errors import OutputError
from acp_trace.owned import MANIFEST, building, check_file, check_folder, manifest


def test_a_folder_is_written_whole_or_left_as_it_was(tmp_path: Path) -> None:
    """An error inside `building` removes the unfinished folder and keeps the earlier one;
    on success the new folder, private, replaces it and its manifest names its files."""
    out = tmp_path / "out"
    with building(out, "report") as temp:
        (temp / "a.md").write_text("first\n")
    assert manifest(out) == {"a.md": "report"} and stat.S_IMODE(out.stat().st_mode) == 0o700
    with pytest.raises(RuntimeError), building(out, "report") as temp:
        (temp / "a.md").write_text("second\n")
        raise RuntimeError("stopped")
    assert (out / "a.md").read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with building(out, "report") as temp:
        (temp / "b.md").write_text("third\n")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "b.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_of_another_writer_or_holding_an_input_is_refused(tmp_path: Path) -> None:
    """A folder whose manifest names another command, or with no manifest, is refused for
    the files it would replace; one that holds an input is refused outright."""
    out = tmp_path / "out"
    with building(out, "report") as temp:
        (temp / "replays.csv").write_text("x\n")
    with pytest.raises(OutputError, match=r"found replays\.csv that it did not write"):
        check_folder(out, "export", ["records.csv", "replays.csv"], [], whole=False)
    check_folder(out, "export", ["records.csv"], [], whole=False)  # a new name: fine
    with pytest.raises(OutputError, match="holds the input"):
        check_folder(tmp_path, "export", [], [out / "replays.csv"], whole=False)


def test_a_file_is_replaced_only_when_its_writer_made_it(tmp_path: Path) -> None:
    """An empty or missing file passes; a file the writer's test does not know is refused,
    naming what it is (a recording names its recorder)."""
    check_file(tmp_path / "missing.jsonl", "import", lambda _: False)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    check_file(tmp_path / "empty.jsonl", "import", lambda _: False)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"acp_trace":1,"kind":"header","recorder":"acp-trace 0.1.0"}\n')
    with pytest.raises(OutputError, match=r"found a trace recorded by acp-trace 0\.1\.0"):
        check_file(trace, "import", lambda _: False)
    check_file(trace, "import", lambda _: True)
