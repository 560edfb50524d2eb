"""At 80 columns the names that tell rows apart get the room first (agents without their npm
scope, session ids cut to what differs, the least needed columns left out with a line that
says so) and prose wraps at spaces; into a pipe every value is whole."""

from __future__ import annotations

import pytest

from clirun import Cli
from testpaths import SAMPLES

TRACES = [
    str(SAMPLES / name)
    for name in (
        "claude-agent-acp-v1-load-air.jsonl",
        "codex-acp-ts-v2-resume.jsonl",
        "codex-acp-rs-v1-load.jsonl",
        "demo-fault-error-after-marker.jsonl",
    )
]
SESSION = "0198c0de-0000-7000-8000-000000000200"


def rows(out: str) -> list[list[str]]:
    """The table's rows (after the header rule), as cells split on runs of spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    table = []
    for line in lines[start:]:
        if not line or line[0].isdigit():
            break
        table.append(line.split())
    return table


def test_replays_at_80_columns_keep_agents_and_sessions_readable(cli: Cli) -> None:
    """Agents read `claude-agent-acp`, `codex-acp` whole; a session id keeps more than its
    first and last four characters; no line is wider than 80; what was left out is said."""
    out = cli("replays", *TRACES, width=80).out
    assert max(len(line) for line in out.splitlines()) <= 80
    table = rows(out)
    assert [r[0] for r in table] == [
        "claude-agent-acp", "claude-agent-acp", "codex-acp", "codex-acp", "acp-trace-demo-agent",
    ]  # fmt: skip
    sessions = [r[2] for r in table[:4]]
    assert all(len(s) >= 12 and s.startswith("0198") and s.endswith("200") for s in sessions)
    assert "complete_failed" in out
    assert "Left out to fit 80 columns: gap source, history updates" in out


def test_replays_into_a_pipe_keep_every_value_whole(cli: Cli) -> None:
    """Into a pipe (COLUMNS=80 or not) the agent keeps its scope and the session id is whole."""
    out = cli("replays", *TRACES, width=None).out
    assert "@agentclientprotocol/claude-agent-acp" in out and SESSION in out
    assert "vendor:jetbrains.air.loadReplayEnd" in out and "Left out" not in out


def test_latency_at_80_columns_names_each_agent_whole(cli: Cli) -> None:
    """claude-agent-acp and codex-acp are whole in every latency section (p99 gives way)."""
    out = cli("latency", *TRACES, width=80).out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\nclaude-agent-acp " in out and "\ncodex-acp " in out and "@" not in out
    assert "Left out to fit 80 columns: p99 ms" in out


@pytest.mark.parametrize("command", ["summary", "check"])
def test_prose_wraps_at_spaces_never_in_a_word(cli: Cli, command: str) -> None:
    """summary and check at 80 columns: lines fit unless one word is longer; the words are
    those of the piped output, none cut in two."""
    wide = cli(command, *TRACES, width=None).out
    narrow = cli(command, *TRACES, width=80).out
    assert narrow.split() == wide.split()
    long = [line for line in narrow.splitlines() if len(line) > 80]
    assert all(" " not in line.strip() for line in long), long
    assert any(len(line) > 80 for line in wide.splitlines())
