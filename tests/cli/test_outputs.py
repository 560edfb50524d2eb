"""Every `-o`: written through acp_trace.files (atomic, no symlink followed, private where it
holds trace contents), and a path that cannot be written is one line and exit 2."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from acp_trace.owned import MANIFEST
from clirun import Cli


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 022: what a user has; files that may follow it come out 0644."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["report", "t.jsonl", "-o", "README.md"],
            "acp-trace: README.md: expected a directory for the output, found a file\n",
        ),
        (
            ["plot", "t.jsonl", "-o", "missing/dir/x.png"],
            "acp-trace: missing/dir/x.png: the directory missing/dir does not exist\n",
        ),
        (
            ["plot", "t.jsonl", "-o", "chart.jpg"],
            "acp-trace: -o chart.jpg: expected a file name ending in .png or .svg\n",
        ),
        (
            ["plot", "t.jsonl", "-o", "README.md/x.png"],
            "acp-trace: README.md/x.png: README.md is a file, not a directory\n",
        ),
        (
            ["export", "t.jsonl", "-f", "csv", "-o", "README.md"],
            "acp-trace: README.md: expected a directory for the output, found a file\n",
        ),
        (
            ["export", "t.jsonl", "-f", "perfetto", "-o", "missing/p.json"],
            "acp-trace: missing/p.json: the directory missing does not exist\n",
        ),
        (
            ["export", "t.jsonl", "-f", "perfetto", "-o", "README.md/"],
            "acp-trace: README.md/: expected a directory for the output, found a file\n",
        ),
        (
            ["import", "t.jsonl", "-o", "missing/x.jsonl"],
            "acp-trace: missing/x.jsonl: the directory missing does not exist\n",
        ),
        (
            ["import", "t.jsonl", "-o", "README.md/"],
            "acp-trace: README.md/: expected a directory for the output, found a file\n",
        ),
    ],
)
def test_a_path_that_cannot_be_written_is_one_line(
    cli: Cli, trace: Path, args: list[str], message: str
) -> None:
    """A `-o` of the wrong kind, or in a missing directory, is one line on stderr and exit 2."""
    (trace.parent / "README.md").write_text("# readme\n")
    (trace.parent / "folder").mkdir()
    result = cli(*args)
    assert (result.code, result.out, result.err) == (2, "", message)
    assert (trace.parent / "README.md").read_text() == "# readme\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may create anything")
def test_an_output_directory_that_cannot_be_created_is_one_line(cli: Cli, trace: Path) -> None:
    """`export -o /proc/x/` cannot be created: one line that says why, exit 2."""
    result = cli("export", "t.jsonl", "-f", "csv", "-o", "/proc/x/")
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("acp-trace: /proc/x: cannot create the directory (")
    assert result.err.count("\n") == 1


def test_proc_is_refused_even_for_root(cli: Cli, trace: Path) -> None:
    """Whoever runs it, a directory under /proc cannot be made: one line, exit 2."""
    result = cli("export", "t.jsonl", "-f", "perfetto", "-o", "/proc/x/")
    assert result.code == 2 and result.err.startswith("acp-trace: /proc/x")
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_the_output_is_checked_before_the_traces_are_read(cli: Cli, tmp_path: Path) -> None:
    """A wrong `-o` is reported even when reading would fail too (no analysis is wasted)."""
    (tmp_path / "README.md").write_text("x")
    result = cli("report", "missing.jsonl", "-o", "README.md")
    assert result.err == "acp-trace: README.md: expected a directory for the output, found a file\n"


def test_report_is_private_charts_included(cli: Cli, trace: Path, open_umask: None) -> None:
    """report -o DIR under umask 022: DIR is 0700, report.md, report.html, replays.csv and the
    charts 0600 (they quote trace text: names, sessions, timings)."""
    result = cli("report", "t.jsonl", "-o", "out")
    out = trace.parent / "out"
    assert result.code == 0
    assert result.out == "wrote out/report.md, out/report.html, out/replays.csv and 4 charts\n"
    assert _mode(out) == 0o700
    assert _mode(out / "report.md") == _mode(out / "report.html") == 0o600
    assert _mode(out / "replays.csv") == 0o600
    assert {
        _mode(out / name) for name in ("gap.png", "replay.png", "weight.png", "latency.png")
    } == {0o600}
    again = cli("report", "t.jsonl", "-o", "out")  # re-running into the same folder works
    assert again.code == 0 and sorted(os.listdir(out)) == sorted(
        [
            "gap.png",
            "latency.png",
            "replay.png",
            "replays.csv",
            "weight.png",
            "report.html",
            "report.md",
            MANIFEST,
        ]
    )
    assert _mode(out / MANIFEST) == 0o600


def test_plot_into_a_directory_and_over_a_planted_link(
    cli: Cli, trace: Path, open_umask: None
) -> None:
    """plot -o DIR/ writes DIR/KIND.png (DIR made 0700 once the chart is drawn, not by a
    command that fails); the chart is 0600; a symlink at -o is replaced, not followed."""
    (trace.parent / "garbage.txt").write_text("no trace here\n")
    failed = cli("plot", "garbage.txt", "-o", "charts/")
    assert failed.code == 2 and not (trace.parent / "charts").exists()
    result = cli("plot", "t.jsonl", "--kind", "latency", "-o", "charts/")
    chart = trace.parent / "charts" / "latency.png"
    assert result.code == 0 and result.out == "wrote charts/latency.png\n"
    assert chart.read_bytes()[:4] == b"\x89PNG" and _mode(chart) == 0o600
    assert _mode(chart.parent) == 0o700
    victim = trace.parent / "victim.txt"
    victim.write_text("keep me")
    (trace.parent / "link.png").symlink_to(victim)
    assert cli("plot", "t.jsonl", "-o", "link.png").code == 0
    assert victim.read_text() == "keep me"
    assert not (trace.parent / "link.png").is_symlink()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_tables_are_private_whatever_the_umask(cli: Cli, trace: Path, fmt: str) -> None:
    """Exported records hold trace contents: 0600 files in a 0700 directory under umask 000."""
    old = os.umask(0)
    try:
        result = cli("export", "t.jsonl", "-f", fmt, "-o", "out/")
    finally:
        os.umask(old)
    out = trace.parent / "out"
    assert result.code == 0
    assert _mode(out) == 0o700
    names = sorted(os.listdir(out))
    assert names == sorted([MANIFEST, *(f"{t}.{fmt}" for t in ("records", "replays", "findings"))])
    assert {_mode(out / n) for n in names} == {0o600}


def test_export_perfetto_into_a_directory_writes_trace_json(cli: Cli, trace: Path) -> None:
    """`export --format perfetto -o dir/` writes dir/trace.json (0600), an existing dir too."""
    result = cli("export", "t.jsonl", "-f", "perfetto", "-o", "p/")
    target = trace.parent / "p" / "trace.json"
    assert (result.code, result.out) == (0, "wrote p/trace.json\n")
    assert orjson.loads(target.read_bytes())["traceEvents"] and _mode(target) == 0o600
    assert cli("export", "t.jsonl", "-f", "perfetto", "-o", "p").out == "wrote p/trace.json\n"


def test_export_perfetto_replaces_a_planted_link(cli: Cli, trace: Path) -> None:
    """A symlink at the perfetto target is replaced by the file; what it pointed to is untouched."""
    victim = trace.parent / "victim.json"
    victim.write_text("{}")
    (trace.parent / "p.json").symlink_to(victim)
    assert cli("export", "t.jsonl", "-f", "perfetto", "-o", "p.json").code == 0
    assert victim.read_text() == "{}" and not (trace.parent / "p.json").is_symlink()


def test_import_writes_private_traces_and_replaces_links(cli: Cli, trace: Path) -> None:
    """import -o DIR/ creates DIR 0700 and 0600 traces; -o FILE over a symlink replaces it."""
    old = os.umask(0)
    try:
        result = cli("import", "t.jsonl", "-o", "imported/")
    finally:
        os.umask(old)
    out = trace.parent / "imported" / "t.jsonl"
    assert result.code == 0 and result.out.startswith("t.jsonl -> imported/t.jsonl: ")
    assert _mode(out.parent) == 0o700 and _mode(out) == 0o600
    assert out.read_bytes() == trace.read_bytes()
    victim = trace.parent / "victim.jsonl"
    victim.write_text("keep")
    (trace.parent / "link.jsonl").symlink_to(victim)
    assert cli("import", "t.jsonl", "-o", "link.jsonl").code == 0
    assert victim.read_text() == "keep"
    assert (trace.parent / "link.jsonl").read_bytes() == trace.read_bytes()


def test_import_refuses_to_overwrite_a_source_before_writing_anything(
    cli: Cli, trace: Path
) -> None:
    """When one target is a source, nothing is written and the message names both."""
    (trace.parent / "d").mkdir()
    other = trace.parent / "d" / "t.jsonl"
    other.write_bytes(trace.read_bytes())
    result = cli("import", "d/t.jsonl", "t.jsonl", "-o", "d/")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "acp-trace: d/: expected a folder that holds no input, found that it holds the input "
        "d/t.jsonl; the output would destroy it (choose another -o)\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["summary"],
        ["replays"],
        ["check"],
        ["timeline"],
        ["latency"],
        ["report", "-o", "rep"],
        ["plot", "-o", "g.png"],
        ["export", "-f", "csv", "-o", "csv/"],
    ],
    ids=lambda a: a[0],
)
def test_every_command_that_reads_traces_warns_of_each_file_skipped(
    cli: Cli, trace: Path, args: list[str]
) -> None:
    """A stray file in the folder costs one warning line on stderr, whatever the command."""
    folder = trace.parent / "traces"
    folder.mkdir()
    trace.rename(folder / "t.jsonl")
    (folder / "agent.log").write_text("agent started\n")
    result = cli(args[0], "traces", *args[1:])
    assert result.code in (0, 1)
    assert result.err.splitlines() == [
        "acp-trace: skipped traces/agent.log: expected an acp-trace v1 trace or an ACP capture "
        "in a known format (jsonrpc, zed, conductor, inspector, thinkwell, acpx, vibe, acp-devtools), found text that is not JSON "
        "('agent started') at the start"
    ]
