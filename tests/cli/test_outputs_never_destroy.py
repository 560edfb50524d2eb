"""Outputs never destroy (issue 40): an output replaces only a file its own command made, an
output folder that is or holds an input is refused, each before any input is read, with one
line and exit 2 saying what was expected, what was found and where."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clirun import Cli
from testpaths import SAMPLES

CAPTURE = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """A copy of sample_traces in tmp_path."""
    shutil.copytree(SAMPLES, tmp_path / "sample_traces")
    return tmp_path / "sample_traces"


def test_import_never_replaces_a_recording(cli: Cli, tmp_path: Path, samples: Path) -> None:
    """`import -o t.jsonl` over a timed recording is refused and the recording kept; over a
    trace an earlier import wrote, or a new name, it writes."""
    recording = tmp_path / "t.jsonl"
    shutil.copy(samples / "demo-v1-load.jsonl", recording)
    before = recording.read_bytes()
    (tmp_path / "cap.jsonl").write_text(CAPTURE)
    refused = cli("import", "cap.jsonl", "-o", "t.jsonl")
    assert refused.code == 2 and recording.read_bytes() == before
    assert refused.err == (
        "acp-trace: t.jsonl: expected a new file or one `acp-trace import` wrote, found a "
        "trace recorded by acp-trace 0.1.0; it would be replaced (choose another -o, or remove "
        "it first)\n"
    )
    assert cli("import", "cap.jsonl", "-o", "new.jsonl").code == 0
    assert cli("import", "cap.jsonl", "-o", "new.jsonl").code == 0  # its own: replaced
    (tmp_path / "dir").mkdir()
    shutil.copy(recording, tmp_path / "dir" / "cap.jsonl")
    assert cli("import", "cap.jsonl", "-o", "dir/").code == 2
    assert (tmp_path / "dir" / "cap.jsonl").read_bytes() == before


@pytest.mark.parametrize("output", ["sample_traces/", "sample_traces", "."])
def test_report_into_an_input_folder_is_refused(cli: Cli, samples: Path, output: str) -> None:
    """`report sample_traces -o sample_traces/` (or a folder holding it): refused, nothing
    written, before any trace is read."""
    listed = sorted(p.name for p in samples.iterdir())
    result = cli("report", "sample_traces", "-o", output)
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(f"acp-trace: {output}: expected a folder that holds no input")
    assert "sample_traces" in result.err and len(result.err.splitlines()) == 1
    assert sorted(p.name for p in samples.iterdir()) == listed


def test_export_never_replaces_the_reports_files(cli: Cli, tmp_path: Path, samples: Path) -> None:
    """`export --format csv -o REPORT/` would replace the report's replays.csv: refused,
    named; a report refuses a folder with files it did not write; each its own folder again."""
    assert cli("report", "sample_traces", "-o", "rep").code == 0
    before = (tmp_path / "rep" / "replays.csv").read_bytes()
    result = cli("export", "sample_traces", "--format", "csv", "-o", "rep/")
    assert result.code == 2 and (tmp_path / "rep" / "replays.csv").read_bytes() == before
    assert "found replays.csv that it did not write" in result.err
    assert cli("export", "sample_traces", "--format", "csv", "-o", "ex/").code == 0
    assert cli("export", "sample_traces", "--format", "parquet", "-o", "ex/").code == 0
    assert cli("export", "sample_traces", "--format", "csv", "-o", "ex/").code == 0
    again = cli("report", "sample_traces", "-o", "ex")
    assert again.code == 2 and "expected a new or empty folder" in again.err
    assert cli("report", "sample_traces", "-o", "rep").code == 0  # its own folder: replaced
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "replays.csv").write_text("mine\n")
    assert cli("export", "sample_traces", "--format", "csv", "-o", "notes/").code == 2
    assert (mine / "replays.csv").read_text() == "mine\n"


def test_a_file_export_replaces_only_its_own(cli: Cli, tmp_path: Path, samples: Path) -> None:
    """`export --format perfetto -o FILE` over a recording or a file of the user's: refused;
    over a Perfetto or OTLP file export wrote: replaced."""
    shutil.copy(samples / "demo-v1-load.jsonl", tmp_path / "t.json")
    (tmp_path / "notes.json").write_text('{"mine": true}\n')
    for name in ("t.json", "notes.json"):
        assert cli("export", "sample_traces", "--format", "perfetto", "-o", name).code == 2
    assert (tmp_path / "notes.json").read_text() == '{"mine": true}\n'
    for fmt in ("perfetto", "perfetto", "otlp", "otlp"):
        assert cli("export", "sample_traces", "--format", fmt, "-o", "x.json").code == 0


def test_the_library_report_keeps_a_folder_of_other_files(tmp_path: Path) -> None:
    """acp_trace's report (demo uses it too) refuses a folder holding files it did not
    write, as the command does: nothing in it is removed."""
    from acp_trace.errors import OutputError
    from acp_trace.render.report.bundle import report

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n")
    with pytest.raises(OutputError, match="expected a new or empty folder"):
        report([str(SAMPLES / "demo-v1-load.jsonl")], mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_a_dataset_folder_holding_an_input_is_refused(cli: Cli, samples: Path) -> None:
    """export --dataset into the folder of the traces: refused before anything is read."""
    result = cli("export", "sample_traces", "--format", "parquet", "--dataset", "sample_traces")
    assert result.code == 2 and "expected a folder that holds no input" in result.err


def test_plot_replaces_only_a_chart_plot_drew(cli: Cli, tmp_path: Path, samples: Path) -> None:
    """`plot -o my.png` over a file of the user's or a report's chart: refused, kept; over a
    chart plot drew (PNG or SVG): replaced."""
    (tmp_path / "my.png").write_bytes(b"\x89PNG mine")
    assert cli("report", "sample_traces", "-o", "rep").code == 0
    for target in ("my.png", "rep/gap.png", "rep/"):
        kept = {p: p.read_bytes() for p in tmp_path.glob("*.png")}
        result = cli("plot", "sample_traces", "-o", target)
        assert (
            result.code == 2 and "expected a new file or one `acp-trace plot` wrote" in result.err
        )
        assert {p: p.read_bytes() for p in tmp_path.glob("*.png")} == kept
    for target in ("c.png", "c.png", "c.svg", "c.svg"):
        assert cli("plot", "sample_traces", "-o", target).code == 0
