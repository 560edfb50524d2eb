"""Finding traces on disk: directories, globs, what a search passes over, and nothing found."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_trace.errors import InputError
from acp_trace.trace.paths import find_traces


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


def test_a_directory_search_passes_over_hidden_and_virtual_environments(tmp_path: Path) -> None:
    """Hidden entries, venvs, node_modules, site-packages and __pycache__ are not searched."""
    _touch(
        tmp_path,
        "a.jsonl",
        "sub/b.ndjson",
        ".git/c.jsonl",
        ".d.jsonl",
        "node_modules/pkg/e.json",
        "venv/lib/site-packages/f.json",
        "env2/g.jsonl",
        "__pycache__/h.log",
        "notes.txt",
    )
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env2" / "pyvenv.cfg").write_text("home = /usr\n")
    found = find_traces([tmp_path])
    assert [f.path.relative_to(tmp_path).as_posix() for f in found] == ["a.jsonl", "sub/b.ndjson"]
    assert not any(f.explicit for f in found)


def test_a_file_named_itself_is_explicit(tmp_path: Path) -> None:
    """A file given by name is explicit, even a hidden one or one without a trace suffix."""
    _touch(tmp_path, ".hidden.txt")
    [found] = find_traces([tmp_path / ".hidden.txt"])
    assert found.explicit and found.root == str(tmp_path / ".hidden.txt")


@pytest.mark.parametrize(
    ("setup", "arg", "message"),
    [
        (
            "empty",
            "{d}",
            "{d}: no trace files (looked for *.jsonl, *.ndjson, *.json, *.jsons, *.log, *.trace)",
        ),
        ("only-other", "{d}", "{d}: no trace files (looked for *.jsonl"),
        ("empty", "{d}/*.jsonl", "{d}/*.jsonl: the pattern matches no file"),
        ("empty", "{d}/missing.jsonl", "{d}/missing.jsonl: no such file or directory"),
    ],
)
def test_an_argument_that_yields_nothing_is_an_error(
    tmp_path: Path, setup: str, arg: str, message: str
) -> None:
    """An empty directory, a glob matching nothing and a missing file raise InputError."""
    if setup == "only-other":
        _touch(tmp_path, "notes.txt", ".hidden/a.jsonl")
    with pytest.raises(InputError) as info:
        find_traces([arg.format(d=tmp_path)])
    assert str(info.value).startswith(message.format(d=tmp_path))


def _walked(folder: Path) -> list[Path]:
    """The search as os.walk and pathlib give it (the reference the faster search must match)."""
    import os

    out: list[Path] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules",)]
        out.extend(
            Path(top) / n
            for n in files
            if not n.startswith(".") and n.endswith(".jsonl") and (Path(top) / n).is_file()
        )
    return sorted(out)


def test_a_search_finds_and_orders_what_os_walk_and_pathlib_find(tmp_path: Path) -> None:
    """Part-by-part order (`a/b` before `a-c`), links to files followed, links to folders and
    broken links not, an unreadable folder passed over."""
    import os

    _touch(tmp_path, "a/b.jsonl", "a-c.jsonl", "a/z/y.jsonl", "a.b/x.jsonl", "B.jsonl", "b.jsonl")
    (tmp_path / "real").mkdir()
    _touch(tmp_path / "real", "r.jsonl")
    (tmp_path / "to-file.jsonl").symlink_to(tmp_path / "a-c.jsonl")
    (tmp_path / "to-dir").symlink_to(tmp_path / "real")
    (tmp_path / "broken.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    _touch(tmp_path, "closed/c.jsonl")
    (tmp_path / "closed").chmod(0)
    try:
        found = [f.path for f in find_traces([tmp_path])]
        expected = _walked(tmp_path)
    finally:
        (tmp_path / "closed").chmod(0o700)
    assert found == expected
    names = [str(p.relative_to(tmp_path)) for p in found]
    assert names.index("a/b.jsonl") < names.index("a-c.jsonl")
    assert "to-file.jsonl" in names and "real/r.jsonl" in names
    assert not any(n.startswith(("to-dir", "broken")) for n in names)
    assert ("closed/c.jsonl" in names) == (os.geteuid() == 0)  # root reads a folder of mode 0
