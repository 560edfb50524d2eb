"""The README's command table and `acp-trace --help` list the same commands, in the same
order; the help of `import`, `diff` and `demo-client` names everything the command takes."""

from __future__ import annotations

import re

import pytest

from acp_trace.trace.importers import CONVERTERS
from clirun import Cli
from testpaths import ROOT


def readme_commands() -> list[str]:
    """The commands of the README's table under "What it does", in its order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## What it does", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^\| `acp-trace ([a-z][a-z-]*)", section, re.MULTILINE)


def test_the_readme_table_and_the_help_list_the_same_commands(cli: Cli) -> None:
    """Every command of `acp-trace --help` has a row in the README's table, and no other row
    is there, in the order of the help."""
    listed = re.findall(r"^  ([a-z][a-z-]*) ", cli("--help").out, re.MULTILINE)
    assert len(listed) >= 20  # every command: record ... demo-client
    assert readme_commands() == listed


def first_paragraph(cli: Cli, command: str) -> str:
    out = cli(command, "--help", width=200).out
    return " ".join(out.split("\n\n")[1].split())


def test_import_help_names_every_format(cli: Cli) -> None:
    """`import --help` names each capture format the importers convert, and its summary
    lists none short (it points at --from, which names them all)."""
    assert first_paragraph(cli, "import").endswith("in any format --from names, to trace v1.")
    text = " ".join(cli("import", "--help", width=200).out.split())
    assert [f for f in CONVERTERS if f not in text] == []


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("diff", ["replay gap", "request latency", "outcome flips", "findings new and gone"]),
        ("demo-client", ["--air", "--session", "--prompt", "--cursor", "--save", "--summary"]),
    ],
)
def test_help_names_what_the_command_takes(cli: Cli, command: str, words: list[str]) -> None:
    """The first paragraph of the help says what the command compares or sends."""
    text = first_paragraph(cli, command)
    assert [w for w in words if w not in text] == []
