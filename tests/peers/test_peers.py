"""Real agents behind `acp-trace record`: the tap is transparent and the analyzer's verdict holds.

Each test fabricates a history of TURNS turns in a fresh private HOME, runs
demo-client -> acp-trace record -> tee_agent -> the agent in a loopback-only netns, compares
both directions byte for byte with the independent capture, then checks the replays table
and the findings against what the agent is known to do (protocol-notes.md).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl
import pytest
from conftest import SID, TURNS, RecordPeer, agent_messages, window_updates
from peerlib import Run

import acp_trace
from acp_trace.jsonrpc import update_class

pytestmark = pytest.mark.peers

RESUME_ID = 1  # demo-client with --session: initialize is 0, the resume or load is 1


def fabricated_texts(turns: int = TURNS) -> list[str]:
    """The texts mk_*.py writes: a question and an answer per turn."""
    return [
        t for i in range(turns) for t in (f"question {i}: what is {i}+{i}?", f"answer {i}: {i + i}")
    ]


def replayed_texts(updates: list[dict[str, Any]]) -> list[str]:
    """The fabricated question/answer texts among replayed updates, in order."""
    out = []
    for update in updates:
        content = update.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and re.fullmatch(r"(question|answer) \d+: .*", text):
                out.append(text)
    return out


def history(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history-kind updates."""
    return [u for u in updates if update_class(u.get("sessionUpdate")) == "history"]


def assert_transparent(run: Run) -> None:
    """Both directions reached the other side unchanged, and the trace holds every agent line."""
    assert run.client_exit == 0, run.client_output
    assert run.same_bytes() == (True, True)
    records = acp_trace.read_trace(run.trace)
    agent_lines = [ln for ln in run.agent_wrote.read_bytes().splitlines() if ln.strip()]
    assert records.filter(pl.col("src") == "agent", pl.col("part").fill_null(0) == 0).height == len(
        agent_lines
    )


def only_row(run: Run) -> dict[str, Any]:
    """The single replays row of the recording (session SID, the first resume or load)."""
    table = acp_trace.replays([run.trace])
    rows = table.filter(pl.col("session") == SID).to_dicts()
    assert len(rows) == 1, table
    return rows[0]


def rules_found(run: Run) -> set[str]:
    """The rule ids the checker reports on the recording."""
    return set(acp_trace.check([run.trace])["rule"].to_list())


def test_codex_acp_rs_v1_load(record_peer: RecordPeer) -> None:
    """codex-acp 0.16.0 (Rust) v1 load: transparent, v1_loaded, two chunks per turn."""
    run = record_peer("codex-acp-rs", 1)
    assert_transparent(run)
    row = only_row(run)
    assert (row["outcome"], row["protocol"]) == ("v1_loaded", 1)
    assert row["history_updates"] == 2 * TURNS
    assert replayed_texts(window_updates(run, RESUME_ID)) == fabricated_texts()


def test_codex_acp_ts_v1_load(record_peer: RecordPeer) -> None:
    """codex-acp 2.6.0 v1 load: transparent, v1_loaded, every fabricated turn replayed as chunks."""
    run = record_peer("codex-acp-ts", 1)
    assert_transparent(run)
    row = only_row(run)
    window = window_updates(run, RESUME_ID)
    assert row["outcome"] == "v1_loaded"
    assert row["history_updates"] == len(history(window))
    assert replayed_texts(window) == fabricated_texts()
    assert [u["sessionUpdate"] for u in history(window)][: 2 * TURNS : 2] == [
        "user_message_chunk"
    ] * TURNS


def test_codex_acp_ts_v2_resume_is_unmarked(record_peer: RecordPeer) -> None:
    """codex-acp 2.6.0 v2 resume: transparent, replay with messageIds and a snapshot, no marker."""
    run = record_peer("codex-acp-ts", 2)
    assert_transparent(run)
    row = only_row(run)
    window = window_updates(run, RESUME_ID)
    assert (row["outcome"], row["protocol"]) == ("unmarked", 2)
    assert row["history_updates"] == len(history(window)) == 4 * TURNS
    assert replayed_texts(window) == fabricated_texts()
    assert all("messageId" in u for u in history(window))
    assert row["state_ms"] is not None and row["marker_ms"] is None
    found = rules_found(run)
    assert "marker-missing" in found and "state-snapshot-missing" not in found


def test_codex_acp_ts_v2_unknown_session_is_truncated(record_peer: RecordPeer) -> None:
    """codex-acp 2.6.0 answers an unknown session with -32603: truncated, nothing replayed."""
    run = record_peer("codex-acp-ts", 2, sid="0198c0de-0000-7000-8000-0000000000ff")
    assert_transparent(run)
    table = acp_trace.replays([run.trace]).to_dicts()
    assert [(r["outcome"], r["history_updates"]) for r in table] == [("truncated", 0)]
    reply = next(m for m in agent_messages(run) if m.get("id") == RESUME_ID)
    assert reply["error"]["code"] == -32603


def test_gemini_cli_v1_load_answers_before_its_history(record_peer: RecordPeer) -> None:
    """gemini-cli 0.61.0 v1 load: one update, the response, then the rest: load-updates-after-response."""
    run = record_peer("gemini-cli", 1)
    assert_transparent(run)
    row = only_row(run)
    assert row["outcome"] == "v1_loaded"
    assert row["history_updates"] == len(history(window_updates(run, RESUME_ID))) == 1
    every = [
        m["params"]["update"] for m in agent_messages(run) if m.get("method") == "session/update"
    ]
    assert replayed_texts(every) == fabricated_texts()
    assert "load-updates-after-response" in rules_found(run)


def test_claude_agent_acp_v2_resume_is_unmarked(record_peer: RecordPeer) -> None:
    """claude-agent-acp 0.101.0 v2 resume: transparent, unmarked, with a measurable replay-end-to-response gap."""
    run = record_peer("claude-agent-acp", 2)
    assert_transparent(run)
    row = only_row(run)
    window = window_updates(run, RESUME_ID)
    assert (row["outcome"], row["protocol"]) == ("unmarked", 2)
    assert row["history_updates"] == len(history(window)) == 4 * TURNS
    assert replayed_texts(window) == fabricated_texts()
    assert row["last_history_to_response_ms"] is not None
    assert "marker-missing" in rules_found(run)


def test_claude_agent_acp_explains_its_gap(record_peer: RecordPeer) -> None:
    """claude-agent-acp 0.101.0 logs its phases on stderr: sdk-initialize is among those inside
    the gap after the replay, the largest is one of them (which one depends on the machine's
    load: a busy machine makes others longer), and the replay row counts the lines."""
    from acp_trace.analysis.phases import largest_phases

    run = record_peer("claude-agent-acp", 2)
    a = acp_trace.analyze([run.trace])
    row = a.replays.row(0, named=True)
    assert row["stderr_lines_in_gap"] >= 1 and row["last_stderr_in_gap"]
    phases = a.gap_phases
    assert "sdk-initialize" in phases["phase"].to_list()
    assert set(phases["family"].to_list()) == {"claude-agent-acp"}
    largest = largest_phases(phases, a.replays).row(0, named=True)
    assert largest["phase"] in phases["phase"].to_list()
    assert 0 < largest["in_gap_ms"] <= largest["gap_ms"]
