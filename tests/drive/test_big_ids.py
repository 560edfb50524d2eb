"""Request ids beyond 64 bits, on either side: compared and answered as the exact integers they
are (rules.md: integers compare exactly at any size), never as floats."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from acp_trace.jsonrpc import loads_exact
from clirun import Cli
from drivelib import BIG, BIG_ID_AGENT, demo_agent


def _bigger(text: str) -> str:
    """Every integer id and requestId of a trace moved past 64 bits (2**64 + N)."""
    text = re.sub(r'"id":(\d+)', lambda m: f'"id":{BIG + int(m.group(1))}', text)
    return re.sub(r'"requestId":(\d+)', lambda m: f'"requestId":{BIG + int(m.group(1))}', text)


def test_a_recording_with_ids_beyond_64_bits_replays(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """A recording whose client numbered its requests past 2**64 lines up with the new run
    request by request: no regression, exit 0 (each replay found on both sides)."""
    recording = tmp_path / "big.jsonl"
    recording.write_text(_bigger(recordings["v2"].read_text()))
    assert str(BIG + 1) in recording.read_text()
    agent = demo_agent("--turns", "5", "--children", "1")
    new = tmp_path / "new.jsonl"
    done = cli("drive", "--speed", "0", "-o", str(new), str(recording), "--", *agent)
    assert done.code == 0, done.out + done.err
    assert "No regression against the recording." in done.out
    assert "request None" not in done.out


def test_an_agent_request_id_beyond_64_bits_is_answered_with_that_id(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """The agent's request numbered 2**64 + 7 gets its answer under 2**64 + 7 exactly, so
    the agent matches it and answers initialize; the play goes on."""
    script = tmp_path / "agent.py"
    script.write_text(BIG_ID_AGENT)
    new = tmp_path / "new.jsonl"
    done = cli("drive", "--speed", "0", "-o", str(new),
               str(recordings["v2"]), "--", sys.executable, str(script))  # fmt: skip
    answers = [
        rec["msg"]
        for rec in map(loads_exact, new.read_bytes().splitlines()[1:])
        if rec.get("src") == "client" and "method" not in rec.get("msg", {"method": 0})
    ]
    assert [a["id"] for a in answers] == [BIG + 7], answers
    assert "no answer to initialize" not in done.out, done.out
