"""The demo agent's replays are the session (rules.md "Replay fidelity"), and each fidelity
fault makes a recording break exactly the rule it is named after."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import acp_trace
from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.demo.faults import bend, parse_faults
from acp_trace.demo.fidelity_faults import FIDELITY_FAULTS
from acp_trace.demo.history import fabricate, replay_window
from acp_trace.demo.window import kind_of
from acp_trace.jsonrpc import MESSAGE_KINDS

ACP = (sys.executable, "-m", "acp_trace")
TWO_TURNS = ("Summarize the history.", "Then name the files.")
ZERO = ("replay_missing", "replay_duplicated", "replay_id_changed", "replay_reordered")


def record(tmp_path: Path, *agent_args: str, **client: Any) -> Path:
    """Record the demo client and agent through the tap; returns the trace."""
    trace = tmp_path / "trace.jsonl"
    tap = (*ACP, "record", "-o", str(trace), "--", *ACP, "demo-agent", *agent_args)
    opts = ClientOptions(command=tap, cwd="/home/user/project", timeout=60, **client)
    assert run_client(opts).finished
    return trace


def rules(trace: Path) -> set[str]:
    return set(acp_trace.check([trace])["rule"].to_list())


def fidelity(trace: Path) -> list[dict[str, Any]]:
    """The fidelity fields of the root session's replay rows."""
    rows = acp_trace.replays([trace])
    rows = rows.filter(rows["parent_session"].is_null())
    fields = ["source", "source_complete", "source_messages", *ZERO, "replay_truncated"]
    return rows.select([*fields, "replay_extra"]).to_dicts()


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_new_session_replays_only_its_own_turns_whole(tmp_path: Path, protocol: int) -> None:
    """session/new and two prompts, then the replay: the two turns, nothing fabricated, the
    live chunks adding up to the replayed message (no finding; a complete source, 0 of every
    difference)."""
    trace = record(tmp_path, "--turns", "50", protocol=protocol, prompts=TWO_TURNS)
    assert rules(trace) == set()
    (row,) = fidelity(trace)
    assert row["source"] == "live" and row["source_complete"] is True
    assert row["source_messages"] == 4
    assert [row[k] for k in (*ZERO, "replay_truncated", "replay_extra")] == [0] * 6


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_session_from_before_replays_its_history_and_the_prompt(
    tmp_path: Path, protocol: int
) -> None:
    """--session with a prompt: opened without replay, prompted, then replayed twice with its
    fabricated history and the prompt's turn; the live turn is the first replay's source, the
    first replay the second's, all matched."""
    trace = record(
        tmp_path,
        "--turns",
        "20",
        protocol=protocol,
        session="sess_demo",
        prompts=TWO_TURNS[:1],
        resumes=2,
    )
    assert rules(trace) == set()
    live, again = fidelity(trace)
    assert (live["source"], live["source_complete"], live["source_messages"]) == ("live", False, 2)
    assert (again["source"], again["source_messages"]) == ("replay", 42)
    for row in (live, again):
        assert [row[k] for k in (*ZERO, "replay_truncated")] == [0] * 5
    replayed = acp_trace.replays([trace])["history_updates"].to_list()
    assert replayed == [42, 42]  # 20 fabricated turns and the prompt's, two updates each


@pytest.mark.parametrize("fault", sorted(FIDELITY_FAULTS))
def test_each_fidelity_fault_breaks_its_rule_alone(tmp_path: Path, fault: str) -> None:
    """A new session, two turns, then a replay with the fault: that rule and no other."""
    trace = record(tmp_path, "--fault", fault, prompts=TWO_TURNS)
    assert rules(trace) == {fault}


@pytest.mark.parametrize("fault", sorted(FIDELITY_FAULTS))
def test_the_faults_leave_children_markers_and_snapshot_alone(fault: str) -> None:
    """Only the session's own messages change: a child's replay, the markers and the state
    snapshot of a v2 window come out as they went in."""
    sessions = {s.sid: s for s in fabricate("p", 2, children=1)}
    window = replay_window(sessions, "p", 2)
    bent = bend(window, parse_faults([fault]))

    def others(actions: list[Any]) -> list[Any]:
        return [a for a in actions if a.session != "p" or kind_of(a) not in MESSAGE_KINDS]

    assert others(bent.replay) == others(window.replay) and bent.tail == window.tail
    assert [a for a in bent.replay if a.session == "p"] != [
        a for a in window.replay if a.session == "p"
    ]
