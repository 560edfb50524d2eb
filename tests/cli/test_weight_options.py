"""--frame-limit, --deadline, --quiet-window and --quiet-cap: a bad value is one line and exit 2
before any trace is read (rules.md "Replay weight, client limits and deadlines")."""

from __future__ import annotations

import pytest

from clirun import Cli


@pytest.mark.parametrize(
    "args",
    [
        ["--frame-limit", "-3"],
        ["--deadline", "abc"],
        ["--quiet-window", "-1"],
        ["--quiet-cap", "1e99"],
    ],
)
@pytest.mark.parametrize("command", ["replays", "check", "report", "timeline"])
def test_the_cli_refuses_them_before_reading(cli: Cli, command: str, args: list[str]) -> None:
    """One line, exit 2, and no trace read: the input does not even exist."""
    done = cli(command, "/no/such/trace.jsonl", *args)
    assert done.code == 2
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and args[0] in lines[0] and "no such file" not in lines[0]
    assert repr(args[1]) in lines[0]
