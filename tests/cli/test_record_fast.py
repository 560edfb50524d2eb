"""`acp-trace record`'s fast path: it takes plain command lines and leaves the rest to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from acp_trace.cli import record_fast
from acp_trace.record.options import RecordOptions

AGENT = ["--", "agent", "--flag", "-o", "x"]


@pytest.mark.parametrize(
    ("argv", "fields"),
    [
        (["record", *AGENT], {}),
        (["record", "-o", "t.jsonl", *AGENT], {"output": "t.jsonl"}),
        (["record", "--output=t.jsonl", *AGENT], {"output": "t.jsonl"}),
        (["record", "--dir", "~/traces", *AGENT], {"directory": "~/traces"}),
        (["record", "--no-redact", *AGENT], {"redact": False}),
        (["record", "--max-record-bytes", "0", *AGENT], {"max_record_bytes": 0}),
        (["record", "--grace=0.5", "--queue-bytes", "1", *AGENT], {"grace": 0.5, "queue_bytes": 1}),
    ],
)
def test_plain_record_lines_are_parsed_like_typer_would(
    argv: list[str], fields: dict[str, Any]
) -> None:
    """Every option, in both spellings, gives the fields the typer command would (paths as
    strings, which trace_file.py takes as typer's Path: pathlib is not loaded on the way to
    the agent); what follows `--` is the agent's, options included."""
    assert record_fast.parse(argv) == {"command": ["agent", "--flag", "-o", "x"], **fields}


@pytest.mark.parametrize(
    "argv",
    [
        ["record", "--help", *AGENT],
        ["record", "-h", *AGENT],
        ["--debug", "record", *AGENT],
        ["summary", "t.jsonl"],
        ["record", "agent"],  # no `--`
        ["record", "--"],  # no agent
        ["record", "--unknown", *AGENT],
        ["record", "-o", *AGENT],  # -o takes the `--`? no: typer decides
        ["record", "--max-record-bytes", "-1", *AGENT],
        ["record", "--max-record-bytes", "1k", *AGENT],
        ["record", "--queue-bytes", "0", *AGENT],
        ["record", "--grace", "nan", *AGENT],
        ["record", "--grace", "-1", *AGENT],
        ["record", "--no-redact=yes", *AGENT],
        ["record", "-o", "", *AGENT],  # typer's Path("") is ".": refused as a directory
        ["record", "--grace", *AGENT[:0]],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    """Help, mistakes, other commands and global options are not taken (typer answers them)."""
    assert record_fast.parse(argv) is None


def test_the_fast_path_knows_every_option_of_the_typer_command() -> None:
    """OPTIONS names every option of `acp-trace record` (so no option silently costs the slow
    path) and maps it to a RecordOptions field."""
    from acp_trace.cli import app

    record = typer.main.get_command(app).commands["record"]  # type: ignore[attr-defined]
    options = [param for param in record.params if param.param_type_name == "option"]
    spelled = {opt for param in options for opt in param.opts}
    assert spelled - {"--help"} == set(record_fast.OPTIONS)
    fields = set(RecordOptions._fields)
    assert {field for field, _read in record_fast.OPTIONS.values()} <= fields


def test_a_repeated_option_collects_its_values() -> None:
    """--redact-stderr may be given several times, spaced or with `=`; its field gets them all."""
    argv = ["record", "--redact-stderr", "a=b", "--redact-stderr=c", *AGENT]
    assert record_fast.parse(argv) == {"command": AGENT[1:], "redact_stderr": ("a=b", "c")}


def test_record_help_still_works() -> None:
    """`acp-trace record --help` is typer's help, with every option."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "record", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for option in record_fast.OPTIONS:
        if option.startswith("--"):
            assert option in done.stdout


def test_the_fast_path_loads_neither_typer_nor_the_analyzer(tmp_path: Path) -> None:
    """A plain `acp-trace record` runs without importing typer, click, rich, polars or
    matplotlib (the agent here prints what the recorder process had loaded)."""
    probe = (
        "import sys; from acp_trace.cli import record_fast; import acp_trace.cli;"
        " record_fast.run = lambda options: print(sorted(m for m in"
        " ('typer', 'click', 'rich', 'polars', 'matplotlib', 'numpy') if m in sys.modules))"
        " or 0; sys.argv = ['acp-trace', 'record', '--', 'true']; acp_trace.cli.main()"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
