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
    "summary",
    "replays",
    "check",
    "timeline",
    "latency",
    "rules",
    "diff",
    "report",
    "plot",
    "export",
    "import",
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
    panels = [title for title in HELP_PANELS if f"─ {title} ─" in out]
    assert panels == list(HELP_PANELS)
    listed = re.findall(r"^│ ([a-z-]+) ", out, re.MULTILINE)
    assert [name for name in listed if name in ORDER] == ORDER


@pytest.mark.parametrize("command", ORDER)
def test_help_at_80_columns_shows_no_bool_and_whole_defaults(cli: Cli, command: str) -> None:
    """No `<bool>` for a flag, and every `[default: ...]` stands on one line, unbroken."""
    result = cli(command, "--help", width=80)
    assert result.code == 0
    assert "<bool>" not in result.out
    assert max(map(len, result.out.splitlines())) <= 80
    opened = result.out.count("[default:")
    closed = len(re.findall(r"\[default: [^\]\n]+\]", result.out))
    assert opened == closed


def test_the_input_formats_are_the_importers(cli: Cli) -> None:
    """--from offers exactly the formats the importers read."""
    assert get_args(SourceFormat) == FORMATS


def test_no_arguments_prints_the_help_and_exits_2(cli: Cli) -> None:
    """`acp-trace` alone shows the command list (and no error line)."""
    result = cli()
    assert result.code == 2 and "Analyze traces" in result.out and result.err == ""


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
