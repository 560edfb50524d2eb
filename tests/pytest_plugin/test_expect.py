"""Assertions on the trace: a failure's message is the finding or the replay row itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from acp_trace.pytest_plugin.agent import AgentUnderTest
from drivelib import demo_agent

Start = Callable[..., AgentUnderTest]


def _resumed(start: Start, *faults: str) -> AgentUnderTest:
    fault_args = [a for f in faults for a in ("--fault", f)]
    agent = start(demo_agent("--session", "s1", "--turns", "4", *fault_args))
    agent.client.initialize(protocol=2)
    agent.client.resume("s1", cwd="/tmp/project")
    return agent


def test_a_correct_replay_passes_every_assertion(acp_agent: Start) -> None:
    """A complete replay: no errors, outcome complete, a gap under a bound, rules absent."""
    agent = _resumed(acp_agent)
    agent.expect.no_errors()
    assert agent.expect.replay("s1", outcome="complete")["history_updates"] == 8
    agent.expect.gap_below(60_000)
    agent.expect.rule_absent("marker-missing")


def test_no_errors_fails_with_the_finding(acp_agent: Start) -> None:
    """The message carries the rule, its severity, the side blamed, the seq, the session and
    the rule's own message, then the trace."""
    agent = _resumed(acp_agent, "marker-missing")
    with pytest.raises(AssertionError) as failed:
        agent.expect.no_errors()
    text = str(failed.value)
    assert "marker-missing (error, blames the agent) at seq " in text
    assert " session s1: " in text and f"trace: {agent.trace}" in text


def test_replay_outcome_and_rule_absent_fail_with_what_happened(acp_agent: Start) -> None:
    """The wrong outcome names the replay, what it was, and the findings on its session."""
    agent = _resumed(acp_agent, "marker-missing")
    with pytest.raises(AssertionError, match=r"session/resume of session s1 \(request id 1\): "
                       "outcome unmarked, expected complete") as failed:  # fmt: skip
        agent.expect.replay("s1", outcome="complete")
    assert "findings on that session:\nmarker-missing (error" in str(failed.value)
    with pytest.raises(AssertionError, match="rule marker-missing found 1 time"):
        agent.expect.rule_absent("marker-missing")


def test_a_gap_over_the_bound_fails_with_the_gap(acp_agent: Start) -> None:
    """A bound of 0 ms cannot be met: the message gives the measured gap and its source."""
    agent = _resumed(acp_agent)
    with pytest.raises(
        AssertionError,
        match=r"gap [0-9.]+ ms \(from the replay_complete marker\), expected under 0 ms",
    ):
        agent.expect.gap_below(0)


def test_no_errors_allows_a_known_rule(acp_agent: Start) -> None:
    """no_errors(allow=[RULE]) lets that rule's errors pass, not others'; an unknown rule id
    is a usage error, not a silent pass."""
    from acp_trace.errors import UsageError

    agent = _resumed(acp_agent, "marker-missing")
    agent.expect.no_errors(allow=["marker-missing"])
    with pytest.raises(AssertionError):
        agent.expect.no_errors(allow=["marker-late"])
    with pytest.raises(UsageError, match="unknown rule id no-such-rule"):
        agent.expect.no_errors(allow=["no-such-rule"])


def test_replay_matches_a_faithful_second_resume(acp_agent: Start) -> None:
    """Two resumes of one session: the second carries every message of the first."""
    agent = _resumed(acp_agent)
    agent.client.resume("s1", cwd="/tmp/project")
    row = agent.expect.replay_matches("s1")
    assert row["source"] == "replay" and row["source_messages"] == 8


def test_replay_matches_fails_with_the_differences(tmp_path: Path) -> None:
    """A replay under new ids, or with no source, fails with what differs and the trace."""
    from acp_trace import analyze
    from acp_trace.pytest_plugin.expect import Expect
    from tracebuilder import TraceBuilder

    b = TraceBuilder()
    for ids in ("", "-again"):
        rid = b.resume("s1")
        b.update(
            "s1", "agent_message", messageId=f"a{ids}", content=[{"type": "text", "text": "hi"}]
        )
        b.marker("s1")
        b.response(rid, {})
    trace = b.write(tmp_path / "t.jsonl")
    expect = Expect(analyze(trace), trace)
    with pytest.raises(AssertionError) as failed:
        expect.replay_matches("s1")
    text = str(failed.value)
    assert "is not its session: id_changed 1 (at most 0)" in text
    assert 'new id       agent_message    source "a" at seq' in text and f"trace: {trace}" in text
    assert expect.replay_matches("s1", id_changed=1)["replay_id_changed"] == 1
    with pytest.raises(AssertionError, match="no source to compare it with"):
        expect.replay_matches("s1", index=0)
