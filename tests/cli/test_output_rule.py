"""The one output rule, command by command (docs/outputs.md): no output overwrites an input
(refused before anything is read), `-o -` and descriptors stream, devices and FIFOs are
written to, a trailing `/` is a directory whose parent must exist, and a name past the file
system's limit is one line."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import orjson
import pytest

from clirun import Cli, runner


@pytest.fixture
def fdcli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Cli:
    """The CLI with stdout captured at the descriptor (what a pipe after `-o -` gets)."""
    return runner(tmp_path, monkeypatch, capfd)


OVER_THE_INPUT = [
    ["export", "t.jsonl", "-f", "perfetto", "-o", "t.jsonl"],
    ["export", "t.jsonl", "-f", "otlp", "-o", "./t.jsonl"],
    ["export", "traces", "-f", "perfetto", "-o", "traces/t.jsonl"],
    ["export", "t.jsonl", "-f", "perfetto", "-o", "hard.jsonl"],
    ["export", "t.jsonl", "traces/records.csv", "-f", "csv", "-o", "traces/"],
    ["import", "t.jsonl", "-o", "t.jsonl"],
    ["import", "traces", "-o", "traces/"],
    ["plot", "t.jsonl", "chart.png", "-o", "chart.png"],
    ["report", "t.jsonl", "rep/report.md", "-o", "rep"],
    ["diff", "--plot", "chart.png", "t.jsonl", "--", "chart.png"],
]


@pytest.mark.parametrize("args", OVER_THE_INPUT, ids=lambda a: "-".join(a[:3]))
def test_an_output_that_is_an_input_is_refused_before_reading(
    cli: Cli, trace: Path, args: list[str]
) -> None:
    """An output that is one of the inputs (by name, another spelling, a hard link, a file
    found under a directory input) is one line and exit 2, and every input is unchanged. The
    refusal comes first: `chart.png` and `report.md` are no traces, and reading them would
    fail."""
    folder = trace.parent
    (folder / "traces").mkdir()
    (folder / "traces" / "t.jsonl").write_bytes(trace.read_bytes())
    (folder / "traces" / "records.csv").write_bytes(trace.read_bytes())
    os.link(trace, folder / "hard.jsonl")
    (folder / "chart.png").write_bytes(b"not a chart")
    (folder / "rep").mkdir()
    (folder / "rep" / "report.md").write_text("# mine\n")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err.count("\n") == 1 and "the output would destroy it" in result.err
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    "args",
    [
        ["export", "t.jsonl", "-f", "perfetto", "-o", "-"],
        ["export", "t.jsonl", "-f", "otlp", "-o", "-"],
        ["export", "t.jsonl", "-f", "perfetto", "-o", "/proc/self/fd/1"],
        ["import", "t.jsonl", "-o", "-"],
    ],
    ids=["perfetto", "otlp", "proc-self-fd-1", "import"],
)
def test_dash_streams_to_stdout(fdcli: Cli, trace: Path, args: list[str]) -> None:
    """`-o -` (and a name of stdout) writes the output to stdout and no file; the notes that
    would land inside the data are not printed there."""
    result = fdcli(*args)
    assert result.code == 0
    assert not (trace.parent / "-").exists()
    if args[0] == "import":
        assert result.out.encode() == trace.read_bytes()
        assert result.err.startswith("t.jsonl -> -: ")
    else:
        assert isinstance(orjson.loads(result.out), dict) and result.err == ""


def test_plot_streams_a_png_and_diff_keeps_stdout(fdcli: Cli, trace: Path) -> None:
    """`plot -o -` writes the PNG to stdout (a pipe here); `diff --plot -` is refused, since
    stdout carries the comparison."""
    result = fdcli("plot", "t.jsonl", "-o", "-")
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("\ufffdPNG") or result.out.startswith("\x89PNG")
    refused = fdcli("diff", "--plot", "-", "t.jsonl", "--", "t.jsonl")
    assert refused.code == 2 and refused.err == (
        "acp-trace: --plot -: stdout carries the comparison; name a file\n"
    )


def test_a_descriptor_is_written_to(cli: Cli, trace: Path) -> None:
    """`-o /dev/fd/N` writes into descriptor N (a pipe), not a file in /dev/fd."""
    read_end, write_end = os.pipe()
    try:
        result = cli("export", "t.jsonl", "-f", "perfetto", "-o", f"/dev/fd/{write_end}")
        os.close(write_end)
        data = b"".join(iter(lambda: os.read(read_end, 65536), b""))
    finally:
        os.close(read_end)
    assert result.code == 0 and orjson.loads(data)["traceEvents"]


def test_a_device_and_a_fifo_are_written_to_not_replaced(cli: Cli, trace: Path) -> None:
    """`-o /dev/null` and `-o FIFO` are written to; both are what they were afterwards."""
    assert cli("export", "t.jsonl", "-f", "perfetto", "-o", "/dev/null").code == 0
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    fifo = trace.parent / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = cli("import", "t.jsonl", "-o", "pipe")
    reader.join(timeout=120)
    assert result.code == 0 and got == [trace.read_bytes()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize(
    ("args", "made"),
    [
        (["export", "t.jsonl", "-f", "perfetto", "-o", "missing/dir/"], "missing"),
        (["export", "t.jsonl", "-f", "csv", "-o", "missing/dir"], "missing"),
        (["report", "t.jsonl", "-o", "missing/rep"], "missing"),
        (["import", "t.jsonl", "-o", "missing/dir/"], "missing"),
        (["plot", "t.jsonl", "-o", "missing/charts/"], "missing"),
    ],
    ids=lambda a: "-".join(a[:2]) if isinstance(a, list) else a,
)
def test_a_missing_parent_is_an_error_not_made(
    cli: Cli, trace: Path, args: list[str], made: str
) -> None:
    """A directory whose parent does not exist is refused in one line; nothing is made."""
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(f"acp-trace: {args[-1]}: the directory missing")
    assert not (trace.parent / made).exists()


def test_a_trailing_slash_makes_a_private_directory(cli: Cli, trace: Path) -> None:
    """`-o new/` makes `new` (0700) when its parent exists, for a file's output too."""
    old = os.umask(0)
    try:
        result = cli("export", "t.jsonl", "-f", "otlp", "-o", "new/")
    finally:
        os.umask(old)
    made = trace.parent / "new"
    assert (result.code, result.out) == (0, "wrote new/spans.json\n")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_tables_to_a_file_name_say_why_they_need_a_directory(
    cli: Cli, trace: Path, fmt: str
) -> None:
    """`export --format parquet -o out.parquet` (or `-o -`) says it writes three tables, so a
    directory; nothing is made."""
    for out in (f"out.{fmt}", "-"):
        result = cli("export", "t.jsonl", "-f", fmt, "-o", out)
        assert (result.code, result.out) == (2, "")
        assert result.err == (
            f"acp-trace: -o {out}: --format {fmt} writes three tables (records.{fmt}, "
            f"replays.{fmt}, findings.{fmt}), so it needs a directory, e.g. -o out/\n"
        )
    assert sorted(os.listdir(trace.parent)) == ["t.jsonl"]


LONG = "a" * 300


@pytest.mark.parametrize(
    "args",
    [
        ["import", "t.jsonl", "-o", f"{LONG}.jsonl"],
        ["export", "t.jsonl", "-f", "otlp", "-o", f"{LONG}.json"],
        ["export", "t.jsonl", "-f", "perfetto", "-o", f"{LONG}.json"],
        ["export", "t.jsonl", "-f", "parquet", "-o", f"{LONG}/"],
        ["export", "t.jsonl", "-f", "perfetto", "-o", f"{LONG}/"],
        ["plot", "t.jsonl", "-o", f"{LONG}.png"],
        ["report", "t.jsonl", "-o", LONG],
        ["summary", f"{LONG}.jsonl"],
    ],
    ids=lambda a: "-".join(a[:3])[:30],
)
def test_a_name_past_the_limit_is_one_line(cli: Cli, trace: Path, args: list[str]) -> None:
    """A name longer than the file system allows is one line, shortened, exit 2."""
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("acp-trace: aaaaaaaaaa") and result.err.count("\n") == 1
    assert "...aaaa" in result.err and "the name is too long for the file system" in result.err


def test_long_source_and_connection_names_are_shortened(cli: Cli, trace: Path) -> None:
    """`import -o DIR/` names each trace after its source: a 245-character file name and an
    inspector capture with a 300-character connection name still give names that fit."""
    source = trace.parent / ("s" * 245 + ".jsonl")
    source.write_bytes(trace.read_bytes())
    frames = [
        {"type": "header", "format": "acp-inspector-trace", "version": 1, "at": 1},
        *(
            {
                "type": "frame",
                "at": 1785312000456,
                "connection": conn,
                "direction": "client -> agent",
                "encoding": "utf8",
                "frame": '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
            }
            for conn in ("c" * 300, "2")
        ),
    ]
    (trace.parent / "insp.jsonl").write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in frames))
    result = cli("import", source.name, "insp.jsonl", "-o", "out/", "--from", "inspector")
    if result.code != 0:  # the 245-character one is no inspector capture: import it apart
        result = cli("import", "insp.jsonl", "-o", "out/", "--from", "inspector")
        assert result.code == 0, result.err
        assert cli("import", source.name, "-o", "out/").code == 0
    names = os.listdir(trace.parent / "out")
    assert len(names) == 3 and all(len(os.fsencode(n)) <= 255 for n in names)
    assert any(n.startswith("insp-ccc") and "~" in n for n in names)


def test_demo_takes_output_and_its_old_out(cli: Cli, trace: Path) -> None:
    """`demo -o/--output DIR` (and the old `--out`, hidden) is checked before recording."""
    (trace.parent / "README.md").write_text("x")
    for option in ("-o", "--output", "--out"):
        result = cli("demo", option, "README.md")
        assert (result.code, result.out) == (2, "")
        assert result.err == (
            "acp-trace: README.md: expected a directory for the output, found a file\n"
        )
    shown = cli("demo", "--help").out
    assert "--output" in shown and "--out " not in shown
