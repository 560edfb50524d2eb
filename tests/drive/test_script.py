"""A recording's client side as steps: order, what each waited for, answers by method."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_trace.drive.script import load_script
from acp_trace.errors import InputError


def test_steps_follow_the_recorded_client(recordings: dict[str, Path]) -> None:
    """Every client request becomes a step in order, each after the answers that came before
    it; a v2 prompt's next step also waits for the end of its turn."""
    script = load_script(recordings["v2"])
    methods = [s.method for s in script.steps]
    assert methods == [
        "initialize",
        "session/new",
        "session/prompt",
        "session/resume",
        "session/resume",
    ]
    assert script.protocol == 2
    assert [s.after for s in script.steps] == [(), (0,), (0, 1), (0, 1, 2), (0, 1, 2, 3)]
    prompt = script.steps[2]
    assert prompt.turn_ended and script.steps[3].turns == (2,)
    assert script.steps[1].created_session == "sess_new_1"
    assert all(s.think_ns >= 0 and s.reply is not None for s in script.steps)


def test_answers_to_agent_requests_are_kept_by_method(recordings: dict[str, Path]) -> None:
    """The client's answer to the agent's permission request is kept under its method."""
    script = load_script(recordings["asks"])
    answers = script.answers["session/request_permission"]
    assert len(answers) == 1 and answers[0]["result"]["outcome"]["outcome"] == "selected"


def test_a_trace_without_client_requests_is_refused(tmp_path: Path) -> None:
    """Nothing to drive is an InputError that names the file."""
    path = tmp_path / "agent-only.jsonl"
    path.write_text(
        '{"acp_trace":1,"kind":"header"}\n'
        '{"seq":1,"t_ns":1,"src":"agent","msg":{"jsonrpc":"2.0","method":"x"}}\n'
    )
    with pytest.raises(InputError, match=r"agent-only\.jsonl: no client request"):
        load_script(path)
