"""`acp-trace diff BASE... -- NEW...`: outputs, exit codes and argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import Cli, Result
from tracebuilder import TraceBuilder


def _ran(result: Result) -> tuple[int, str, str]:
    return result.code, result.out, result.err


def _trace(path: Path, gaps: list[float]) -> Path:
    b = TraceBuilder(agent="agent-x", version="1.0")
    for gap in gaps:
        rid = b.resume("s1")
        b.history("s1", 1)
        b.marker("s1")
        b.state("s1")
        b.response(rid, dt=gap)
    return b.write(path)


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    base = _trace(tmp_path / "base.jsonl", [20 + i % 3 for i in range(10)])
    new = _trace(tmp_path / "new.jsonl", [120 + i % 5 for i in range(10)])
    return base, new


def test_a_regression_exits_1_and_names_it(sides: tuple[Path, Path], cli: Cli) -> None:
    """The text output starts with the headline and the regressions; exit code 1."""
    base, new = sides
    code, out, _ = _ran(cli("diff", str(base), "--", str(new)))
    assert code == 1
    assert out.startswith(
        "acp-trace diff: 4 regressions found\n  - gap p50 of agent-x session/resume: 22.0 -> 123.0 ms"
    )


def test_no_regression_exits_0(sides: tuple[Path, Path], cli: Cli) -> None:
    """The same traces on both sides: exit 0."""
    base, _ = sides
    code, out, _ = _ran(cli("diff", str(base), "--", str(base)))
    assert code == 0 and out.startswith("acp-trace diff: no regression found\n")


def test_json_and_markdown(
    sides: tuple[Path, Path],
    tmp_path: Path,
    cli: Cli,
) -> None:
    """JSON has every table and the verdict; Markdown is a PR comment with a heading and a
    table; --plot writes the chart."""
    base, new = sides
    chart = tmp_path / "diff.png"
    code, out, _ = _ran(
        cli("diff", "--format", "json", "--plot", str(chart), str(base), "--", str(new))
    )
    doc = json.loads(out)
    assert code == 1 and doc["regression"] is True
    assert {"metrics", "flips", "outcomes", "findings", "regressions", "options"} <= set(doc)
    assert chart.read_bytes().startswith(b"\x89PNG")
    code, out, _ = _ran(cli("diff", "-f", "markdown", str(base), "--", str(new)))
    assert out.startswith("## acp-trace diff: 4 regressions found\n")
    assert "| metric | agent | method | stat |" in out and "| regression |" in out
    assert "session/resume: 22.0 -&gt; 123.0 ms" in out  # escaped: pasted text cannot inject markup


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["{b}", "{n}"],
            "acp-trace: diff: expected BASE... -- NEW... (the two sides split by `--`)",
        ),
        (["{b}", "--"], "acp-trace: diff: no NEW traces (expected BASE... -- NEW...)"),
        (
            ["{b}", "--", "{n}", "--format", "json"],
            "acp-trace: diff: --format after the traces; put options before BASE",
        ),
        (
            ["--threshold", "banana", "{b}", "--", "{n}"],
            "acp-trace: --threshold banana: expected a share of BASE",
        ),
        (
            ["--format", "yaml", "{b}", "--", "{n}"],
            "acp-trace: --format yaml: expected one of text, json, markdown",
        ),
        (["{b}", "--", "missing.jsonl"], "acp-trace: missing.jsonl: no such file or directory"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    sides: tuple[Path, Path],
    cli: Cli,
    args: list[str],
    message: str,
) -> None:
    """Each mistake is one `acp-trace: ...` line and exit code 2."""
    base, new = sides
    argv = [a.format(b=base.name, n=new.name) for a in args]
    code, out, err = _ran(cli("diff", *argv))
    assert code == 2 and out == "" and err.startswith(message) and "Traceback" not in err
