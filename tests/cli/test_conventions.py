"""What people expect of a Python CLI (issue 27, items 5 and 7): options checked before any
input is read, --version/-V, --debug after the command, shell completion, --format json for
summary, rules and timeline, readable metavars, one-line usage errors, coloured severities."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from acp_trace import __version__
from acp_trace.cli import analysis as cli_analysis
from clirun import Cli

COMMANDS = [
    "record", "mock", "summary", "replays", "check", "timeline", "latency", "rules", "diff",
    "report", "plot", "export", "import", "demo", "demo-agent", "demo-client",
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["check", "--rule", "nosuch"], "acp-trace: unknown rule id nosuch; see `acp-trace rules`"),
        (["replays", "--columns", "agent,foo"], "acp-trace: --columns foo: no such column; "),
        (["plot", "-o", "x.jpg"], "acp-trace: -o x.jpg: expected a file name ending in .png"),
        (
            ["check", "--no-schema", "--rule", "schema-invalid"],
            "acp-trace: --rule schema-invalid needs the schema validation that --no-schema "
            "turns off; drop one of the two",
        ),
    ],
    ids=["rule", "columns", "plot-suffix", "no-schema-rule"],
)
def test_options_are_checked_before_the_input_is_read(cli: Cli, args: list[str], says: str) -> None:
    """A wrong option is the error even when the input is missing: nothing was read first."""
    result = cli(*args, "missing.jsonl")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(says) and result.err.count("\n") == 1


def test_columns_and_rules_that_exist_still_work(cli: Cli, trace: Path) -> None:
    """The early checks pass what the commands take: gap_ms, a column of the table, a rule."""
    assert cli("replays", "t.jsonl", "--columns", "gap_ms,agent").code == 0
    assert cli("check", "t.jsonl", "--no-schema", "--rule", "marker-missing").code in (0, 1)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(cli: Cli, flag: str) -> None:
    """--version and -V print the version and exit 0."""
    assert cli(flag) == type(cli(flag))(0, f"acp-trace {__version__}\n", "")


def test_debug_after_the_command_shows_the_traceback(cli: Cli) -> None:
    """`acp-trace summary X --debug` is taken as `acp-trace --debug summary X`; after `--`
    it belongs to the traces (or the agent)."""
    result = cli("summary", "missing.jsonl", "--debug")
    assert result.code == 2 and "Traceback" in result.err
    assert result.err.endswith("acp-trace: missing.jsonl: no such file or directory\n")
    plain = cli("summary", "missing.jsonl")
    assert "Traceback" not in plain.err


def test_shell_completion_is_offered(cli: Cli) -> None:
    """The root has --install-completion and --show-completion."""
    out = cli("--help").out
    assert "--install-completion" in out and "--show-completion" in out


def test_summary_rules_and_timeline_as_json(cli: Cli, trace: Path) -> None:
    """`--format json` gives the same facts as data: summary's traces and skipped files, the
    rule catalogue, the timeline's records (a list per column) with `replay` marking a replay
    window's."""
    summary = orjson.loads(cli("summary", "t.jsonl", "-f", "json").out)
    assert [t["trace"] for t in summary["traces"]] == ["t.jsonl"] and summary["skipped"] == []
    assert summary["traces"][0]["agent"] == "demo-agent"
    rules = orjson.loads(cli("rules", "--format", "json").out)
    assert {"id", "severity", "side", "summary"} == set(rules[0])
    assert len(rules) == len(cli("rules").out.splitlines())
    every = orjson.loads(cli("timeline", "t.jsonl", "-f", "json").out)
    replays = orjson.loads(cli("timeline", "t.jsonl", "-f", "json", "--replays-only").out)
    assert replays["seq"] and all(replays["replay"]) and len(replays["seq"]) < len(every["seq"])
    assert replays["method"][0] == "session/resume"
    one = orjson.loads(cli("timeline", "t.jsonl", "-f", "json", "--session", "sess_2").out)
    shown = {s for s, src in zip(one["session"], one["src"], strict=True) if src != "stderr"}
    assert one["seq"] and shown == {"sess_2"}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_readable_metavars(cli: Cli, command: str) -> None:
    """No typer type labels (`<list[str]>`, `<int range>`, `<path>`) and no `{TRACE}...`."""
    out = cli(command, "--help").out
    assert not re.search(r"<[a-z][^>]*>", out), out
    assert "{" not in out.split("\n", 1)[0]


def test_from_lists_every_format_and_mock_needs_a_trace(cli: Cli) -> None:
    """--from's help names every input format; mock's usage shows TRACE... as required."""
    out = " ".join(cli("summary", "--help", width=200).out.split())
    assert (
        "acp-trace, jsonrpc, zed, conductor, inspector, thinkwell, acpx, vibe or acp-devtools"
        in out
    )
    mock = cli("mock", "--help").out
    assert mock.startswith("Usage: acp-trace mock [OPTIONS] TRACE...\n")
    assert cli("mock", "--list-faults").code == 0  # needs no TRACE


def test_a_missing_choice_option_is_one_line(cli: Cli, trace: Path) -> None:
    """The error for a missing --format lists the choices on its one line."""
    result = cli("export", "t.jsonl")
    assert result.err == (
        "acp-trace: export: Missing option '--format' / '-f'. Choose from: parquet, csv, "
        "perfetto, otlp; see `acp-trace export --help`\n"
    )


def test_severities_are_coloured_at_a_terminal(
    cli: Cli, trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a terminal, each finding's severity is coloured; piped, the text is plain."""
    plain = cli("check", "t.jsonl").out
    monkeypatch.setattr(cli_analysis, "colour", lambda: True)
    styled = cli("check", "t.jsonl").out
    assert "\x1b[" not in plain and "\x1b[1;31merror\x1b[0m" in styled
    assert re.sub(r"\x1b\[[0-9;]*m", "", styled) == plain


@pytest.mark.parametrize("command", ["report", "plot", "export"])
def test_file_writing_commands_take_workers(cli: Cli, command: str) -> None:
    """report, plot and export read many traces with --workers like the others."""
    assert "--workers INTEGER" in cli(command, "--help").out


def test_the_early_column_check_knows_every_column(trace: Path) -> None:
    """`--columns` is checked before reading against REPLAY_SCHEMA, the fidelity fields and the
    phase pass's columns: they are exactly the columns of an analyzed replays table."""
    from acp_trace.analysis import analyze
    from acp_trace.analysis.replay_fidelity import FIDELITY_SCHEMA
    from acp_trace.analysis.replay_weight import WEIGHT_SCHEMA
    from acp_trace.analysis.replays import REPLAY_SCHEMA

    real = analyze([trace]).replays.columns
    assert real == [
        *REPLAY_SCHEMA,
        *FIDELITY_SCHEMA,
        *WEIGHT_SCHEMA,
        *cli_analysis.GAP_PHASE_COLUMNS,
    ]
    assert cli_analysis.replay_columns_asked(",".join(real)) == real
