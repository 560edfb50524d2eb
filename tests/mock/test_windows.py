"""A recorded request as a window: where the replay ends, what is tail, what the faults touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_trace.demo.faults import parse_faults
from acp_trace.demo.window import LOAD, REPLAY, RESUME, Step
from acp_trace.mock.recording import Cue, load_connections
from acp_trace.mock.windows import OTHER, kind_of_cue, prepared, window_of
from tracebuilder import TraceBuilder


def cue(path: Path, index: int = 1) -> Cue:
    return load_connections([path])[0].cues[index]


def kinds(actions: list[object]) -> list[str | None]:
    return [
        (a.update or {}).get("sessionUpdate") if isinstance(a, Step) and a.update else None
        for a in actions
    ]


def test_the_replay_ends_after_the_last_history_or_marker_of_the_session_and_children(
    tmp_path: Path,
) -> None:
    """History, a child's block and the marker are replay; the live updates after, the tail."""
    t = TraceBuilder()
    rid = t.resume("s")
    t.update("s", "session_info_update")
    t.update("s", "user_message")
    t.update("s", "subagent_update", sessionId="c")
    t.update("c", "agent_message")
    t.text("stderr", "child done")
    t.update("other", "agent_message")  # a session the replay does not cover
    t.update("s", "notice")
    t.state("s")
    t.response(rid)
    t.update("s", "usage_update")
    window = window_of(cue(t.write(tmp_path / "t.jsonl")), 2)
    assert window.kind == REPLAY
    assert kinds(window.replay) == [
        "session_info_update",
        "user_message",
        "subagent_update",
        "agent_message",
    ]
    assert kinds(window.tail) == [None, "agent_message", "notice", "state_update"]
    assert kinds(window.after) == ["usage_update"]
    assert window.reply.item is not None and window.reply.item.seq == t.seq - 1


@pytest.mark.parametrize(
    ("method", "params", "protocol", "kind"),
    [
        ("session/resume", {"sessionId": "s", "replayFrom": {"type": "start"}}, 2, REPLAY),
        ("session/resume", {"sessionId": "s", "replayFrom": None}, 2, RESUME),
        ("session/resume", {"sessionId": "s"}, 2, RESUME),
        ("session/resume", {"sessionId": "s", "replayFrom": {"type": "start"}}, 1, RESUME),
        ("session/load", {"sessionId": "s"}, 1, LOAD),
        ("session/prompt", {"sessionId": "s"}, 2, OTHER),
        ("session/new", {}, 1, OTHER),
    ],
)
def test_window_kinds(
    tmp_path: Path, method: str, params: dict[str, object], protocol: int, kind: str
) -> None:
    """Replaying resumes (v2 with a cursor), resumes without, v1 loads, everything else."""
    t = TraceBuilder(protocol=protocol)
    t.request(method, params)
    assert kind_of_cue(cue(t.write(tmp_path / "t.jsonl")), protocol) == kind


def test_faults_bend_only_windows_the_recording_answered_with_success(tmp_path: Path) -> None:
    """An error window (unknown session) is played as recorded even with a fault asked for."""
    t = TraceBuilder()
    ok = t.resume("s")
    t.update("s", "user_message")
    t.response(ok)
    bad = t.resume("gone")
    t.error(bad, -32002)
    conn = load_connections([t.write(tmp_path / "t.jsonl")])[0]
    faults = parse_faults(["marker-duplicate"])
    assert kinds(prepared(conn.cues[1], 2, faults).replay) == [
        "user_message",
        "replay_complete",
        "replay_complete",
    ]
    failed = prepared(conn.cues[2], 2, faults)
    assert failed.replay == [] and failed.tail == []


def test_other_requests_are_never_bent(tmp_path: Path) -> None:
    """A prompt's updates stay as recorded whatever the faults."""
    t = TraceBuilder()
    rid = t.request("session/prompt", {"sessionId": "s", "prompt": []})
    t.update("s", "agent_message_chunk", messageId="m")
    t.response(rid, {"stopReason": "end_turn"})
    window = prepared(cue(t.write(tmp_path / "t.jsonl")), 2, parse_faults(["message-id-missing"]))
    assert window.kind == OTHER
    assert [a.update for a in window.replay if isinstance(a, Step)] == [
        {"sessionUpdate": "agent_message_chunk", "messageId": "m"}
    ]
