"""Replay fidelity on real agents' traffic (rules.md "Replay fidelity"): each agent loads the
same fabricated session twice on one connection, so the second replay is set against the
first (its source: the earlier replay). Are the messages, their ids and their contents the
same both times? What each agent does is written in docs/analysis.md, "Replay fidelity of
real agents"; these tests keep it true."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from conftest import SID, TURNS, RecordPeer
from test_peers import assert_transparent

import acp_trace
from acp_trace.render.fidelity import fidelity_data

pytestmark = pytest.mark.peers

FIELDS = ("source", "source_messages", "replay_missing", "replay_duplicated",
          "replay_id_changed", "replay_reordered", "replay_truncated")  # fmt: skip


def _rows(run: Any) -> list[dict[str, Any]]:
    table = acp_trace.replays([run.trace]).filter(pl.col("session") == SID)
    return table.select("outcome", *FIELDS).to_dicts()


def _fidelity_rules(run: Any) -> set[str]:
    found = acp_trace.check([run.trace], schema=False)
    return {
        r
        for r in found["rule"].to_list()
        if r.startswith("replay-") and r != "replay-without-cursor"
    }


@pytest.mark.parametrize(
    ("name", "protocol"),
    [("claude-agent-acp", 1), ("codex-acp-rs", 1)],
)
def test_a_second_load_replays_the_first_whole(
    record_peer: RecordPeer, name: str, protocol: int
) -> None:
    """Two loads of one session: the second carries every message of the first, in order,
    whole (v1 messages have no ids: matched by their text)."""
    run = record_peer(name, protocol, resumes=2)
    assert_transparent(run)
    first, second = _rows(run)
    assert first["source"] is None  # nothing before it in the trace
    assert second["source"] == "replay" and second["source_messages"] >= 2 * TURNS
    assert {k: second[k] for k in FIELDS[2:]} == dict.fromkeys(FIELDS[2:], 0)
    assert not _fidelity_rules(run)


def test_codex_acp_ts_appends_a_warning_to_its_first_replay(record_peer: RecordPeer) -> None:
    """codex-acp (TypeScript) sends a configuration warning as an agent_message_chunk right
    after the first load's history, and only then: in v1 it runs into the last replayed
    message, so the second load's last message (without it) matches nothing of the first:
    one message missing, named with its text, everything else whole."""
    run = record_peer("codex-acp-ts", 1, resumes=2)
    assert_transparent(run)
    second = _rows(run)[1]
    assert second["source"] == "replay" and second["replay_missing"] == 1
    assert {k: second[k] for k in FIELDS[3:]} == dict.fromkeys(FIELDS[3:], 0)
    data = fidelity_data(acp_trace.analyze([run.trace]), session=SID)
    [missing] = data[1]["differences"]
    assert missing["what"] == "missing" and missing["kind"] == "agent_message"
    assert (
        missing["text"].startswith(f"answer {TURNS - 1}: ") and "Config warning" in missing["text"]
    )
    assert _fidelity_rules(run) == {"replay-missing-messages"}


def test_claude_agent_acp_v2_ids_are_stable_across_resumes(record_peer: RecordPeer) -> None:
    """claude-agent-acp's v2 replays carry messageIds; a second resume keeps every id."""
    run = record_peer("claude-agent-acp", 2, resumes=2)
    assert_transparent(run)
    second = _rows(run)[1]
    assert second["source"] == "replay"
    assert (second["replay_id_changed"], second["replay_missing"]) == (0, 0)
    assert not _fidelity_rules(run) & {"replay-id-unstable", "replay-prompt-id-changed"}


def test_gemini_cli_replays_each_user_message_as_one_chunk(record_peer: RecordPeer) -> None:
    """gemini-cli answers a load before its history; its replay's user messages are one
    chunk each: the second load matches the first, message for message."""
    run = record_peer("gemini-cli", 1, resumes=2)
    assert_transparent(run)
    rows = _rows(run)
    assert len(rows) == 2 and rows[1]["source"] == "replay"
    assert rows[1]["replay_truncated"] == 0 and rows[1]["replay_duplicated"] == 0
