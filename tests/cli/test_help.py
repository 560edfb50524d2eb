"""`--help`: commands grouped in the order a user meets them, flags without a type, defaults
whole at 80 columns; the input formats the CLI offers are the importers' ones."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from acp_trace.cli import app
from acp_trace.cli.app import HELP_PANELS, SourceFormat, arrange_commands
from acp_trace.trace.importers import FORMATS
from clirun import Cli

ORDER = [
    "record",
    "mock",
    "bridge",
    "watch",
    "summary",
    "replays",
    "fidelity",
    "check",
    "timeline",
    "latency",
    "rules",
    "diff",
    "drive",
    "report",
    "plot",
    "export",
    "compact",
    "import",
    "mcp",
    "demo",
    "demo-agent",
    "demo-client",
]


def _commands() -> list[str]:
    arrange_commands()
    return [str(i.name or i.callback.__name__.replace("_", "-")) for i in app.registered_commands]


def test_every_command_has_a_panel_in_the_order_a_user_meets_them(cli: Cli) -> None:
    """The root help lists the panels, and their commands, in ORDER; no command is left out."""
    assert _commands() == ORDER
    assert [name for names in HELP_PANELS.values() for name in names] == ORDER
    out = cli("--help").out
    panels = re.findall(r"^([A-Z][a-z ]+):$", out, re.MULTILINE)
    assert panels == ["Options", *HELP_PANELS]
    listed = re.findall(r"^  ([a-z][a-z-]*) ", out, re.MULTILINE)
    assert listed == ORDER


def test_each_command_is_listed_with_its_whole_first_paragraph(cli: Cli) -> None:
    """A command's line in the root help is its help's first paragraph, not cut short (the
    plain help of click cuts at 45 characters), aligned in one column for every group."""
    out = cli("--help", width=80).out
    text = " ".join(out.split())
    for info in app.registered_commands:
        doc = (info.help or info.callback.__doc__ or "").split("\n\n")[0]
        assert " ".join(doc.split()) in text
    starts = {m.end(2) - m.start(1) for m in re.finditer(r"^  ([a-z][a-z-]*)( +)\S", out, re.M)}
    assert len(starts) == 1, "every group's descriptions start in one column"


def test_help_text_is_not_read_as_markup(cli: Cli) -> None:
    """Square brackets in a help text are shown as written (rich markup ate `[fleet]`)."""
    out = cli("check", "--help", width=100).out
    assert "'.[fleet]'" in out


@pytest.mark.parametrize("command", ORDER)
def test_help_at_80_columns_shows_no_bool_and_whole_defaults(cli: Cli, command: str) -> None:
    """No `<bool>` for a flag, and every `[default: ...]` stands on one line, unbroken."""
    result = cli(command, "--help", width=80)
    assert result.code == 0
    assert "<bool>" not in result.out
    assert max(map(len, result.out.splitlines())) <= 80
    opened = result.out.count("[default:")
    closed = len(re.findall(r"\[default:\s[^\]\n]+\]", result.out))  # \s: a no-break space too
    assert opened == closed


def test_the_input_formats_are_the_importers(cli: Cli) -> None:
    """--from offers exactly the formats the importers read."""
    assert get_args(SourceFormat) == FORMATS


def test_no_arguments_prints_the_help_and_exits_2(cli: Cli) -> None:
    """`acp-trace` alone shows the command list (and no error line)."""
    result = cli()
    assert result.code == 2 and "Analyze traces" in result.out and result.err == ""


@pytest.mark.parametrize("args", [["--help"], ["rules"], ["check", "--help"]])
def test_help_and_rules_start_without_polars_rich_or_pydantic(args: list[str]) -> None:
    """`--help`, `rules` and a command's help load neither polars nor rich, nor the pydantic
    of typer's value coercion (a flag that was not given is not coerced): they start at once."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from acp_trace.cli import main\n"
        f"sys.argv = ['acp-trace', *{args!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(sorted({'rich', 'polars', 'matplotlib', 'pydantic'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_rule_catalogue_is_the_registry() -> None:
    """`acp-trace rules` prints the catalogue, which lists every registered rule, in order,
    with the registry's severity, side and summary."""
    from acp_trace.analysis.checks import CATALOGUE, RULES

    assert [(r.id, r.severity, r.side, r.summary) for r in RULES.values()] == list(CATALOGUE)


def test_a_rule_unlike_its_catalogue_entry_is_refused() -> None:
    """A check registered with a summary (or severity, side, id) other than the catalogue's
    fails at once, so the catalogue cannot go stale."""
    from acp_trace.analysis.checks import rule

    with pytest.raises(RuntimeError, match="catalogue"):
        rule("marker-missing", "warning", "a replaying v2 resume succeeded without a marker")
    with pytest.raises(RuntimeError, match="catalogue"):
        rule("no-such-rule", "info", "nothing")


def test_loading_the_cli_loads_no_table_or_analysis_library() -> None:
    """`acp-trace record` starts without rich, polars or matplotlib (they load when needed)."""
    import subprocess
    import sys

    code = (
        "import sys, acp_trace.cli; "
        "print(sorted({'rich', 'polars', 'matplotlib', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_choices_offered_are_the_analysis_ones() -> None:
    """--by and --min-severity offer exactly what the analysis accepts."""
    from typing import get_type_hints

    from acp_trace.analysis import checks, latency
    from acp_trace.cli import analysis

    by = get_type_hints(analysis.latency, include_extras=True)["by"]
    severity = get_type_hints(analysis.check, include_extras=True)["min_severity"]
    assert set(get_args(get_args(by)[0])) == set(latency.GROUPS)
    assert set(get_args(get_args(severity)[0])) == set(checks.SEVERITIES)
