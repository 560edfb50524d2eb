"""Tests of the rule catalogue: each rule has a trace that breaks it and a near miss that must not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.checks import RULES
from tracebuilder import TraceBuilder

ACCEPT = {"executablemd.session-materialization/v1": {"state": "accepted"}}


def _resume_ok(b: TraceBuilder, session: str = "s", turns: int = 1) -> None:
    rid = b.resume(session)
    b.history(session, turns)
    b.marker(session)
    b.state(session)
    b.response(rid, {})


def _new_session(b: TraceBuilder, session: str) -> None:
    rid = b.request("session/new", {"cwd": "/", "mcpServers": []})
    b.response(rid, {"sessionId": session})


# ---------------------------------------------------------------- cases: (builder, expected rules)


def correct_v2_with_children() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.history("p", 2)
    b.update("p", "subagent_update", sessionId="c1")
    b.history("c1", 2)
    b.update("p", "subagent_update", sessionId="c2")
    b.history("c2", 1)
    b.marker("c2")
    b.marker("c1")
    b.marker("p")
    b.update("p", "available_commands_update", availableCommands=[])
    b.update("c1", "usage_update", used=1)
    b.state("p")
    b.response(rid, {})
    return b


def correct_v1_load() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    for i in range(3):
        b.update("s", "user_message_chunk", content={"type": "text", "text": f"q{i}"})
        b.update("s", "agent_message_chunk", content={"type": "text", "text": f"a{i}"})
    b.response(rid, {})
    b.update("s", "available_commands_update", availableCommands=[])
    return b


def long_prompt_session() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _new_session(b, "s")
    for turn in range(5):
        rid = b.request(
            "session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}
        )
        b.update("s", "agent_thought_chunk", content={"type": "text", "text": "hmm"})
        b.update("s", "tool_call", toolCallId=f"t{turn}", title="edit", status="pending")
        pid = b.request(
            "session/request_permission",
            {"sessionId": "s", "toolCall": {"toolCallId": f"t{turn}"}},
            src="agent",
        )
        b.response(pid, {"outcome": {"outcome": "selected", "optionId": "allow"}}, src="client")
        b.update("s", "tool_call_update", toolCallId=f"t{turn}", status="completed")
        b.request("fs/read_text_file", {"sessionId": "s", "path": "/x"}, id=100 + turn, src="agent")
        b.response(100 + turn, {"content": "x"}, src="client")
        b.update("s", "plan", entries=[])
        b.update("s", "agent_message_chunk", content={"type": "text", "text": "done"})
        b.update("s", "usage_update", used=10)
        b.response(rid, {"stopReason": "end_turn"})
    return b


def marker_missing() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.state("s")
    b.response(rid, {})
    return b


def marker_missing_then_late() -> TraceBuilder:
    b = marker_missing()
    b.marker("s")
    return b


def marker_duplicate() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def marker_unexpected_on_new() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.request("session/new", {"cwd": "/", "mcpServers": []})
    b.marker("s")
    b.response(rid, {"sessionId": "s"})
    return b


def marker_unexpected_without_cursor() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor=None)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def marker_after_complete_resume_without_cursor() -> TraceBuilder:
    b = TraceBuilder()
    _resume_ok(b)
    rid = b.resume("s", cursor=None)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def marker_with_rejection() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor={"type": "_vendor_from", "at": 3})
    b.marker("s")
    b.error(rid, -32602)
    return b


def rejection_without_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor={"type": "_vendor_from", "at": 3})
    b.error(rid, -32602)
    return b


def live_before_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.update("s", "available_commands_update", availableCommands=[])
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def live_before_marker_active() -> TraceBuilder:
    b = TraceBuilder()
    _new_session(b, "s")
    rid = b.resume("s")
    b.history("s", 1)
    b.update("s", "session_info_update", title="t")
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def live_right_after_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    b.update("s", "available_commands_update", availableCommands=[])
    b.state("s")
    b.response(rid, {})
    return b


def live_before_missing_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.update("s", "notice", message="n")
    b.history("s", 1)
    b.state("s")
    b.response(rid, {})
    return b


def request_before_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    pid = b.request("session/request_permission", {"sessionId": "s"}, src="agent")
    b.response(pid, {"outcome": {"outcome": "cancelled"}}, src="client")
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def child_marker_missing() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.history("c", 1)
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def child_marker_before_announce() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.marker("c")
    b.update("p", "subagent_update", sessionId="c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def unannounced_child_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def concurrent_replay() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("s")
    r2 = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    b.marker("s")
    b.state("s")
    b.response(r1, {})
    b.state("s")
    b.response(r2, {})
    return b


def concurrent_different_sessions() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("a")
    r2 = b.resume("b")
    b.marker("a")
    b.marker("b")
    b.state("a")
    b.state("b")
    b.response(r1, {})
    b.response(r2, {})
    return b


def state_snapshot_missing() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor=None)
    b.response(rid, {})
    return b


def state_snapshot_missing_v1() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.request("session/resume", {"sessionId": "s", "cwd": "/"})
    b.response(rid, {})
    return b


def replay_without_cursor() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor=None)
    b.history("s", 1)
    b.state("s")
    b.response(rid, {})
    return b


def replay_without_cursor_v1() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.request("session/resume", {"sessionId": "s", "cwd": "/"})
    b.update("s", "user_message_chunk")
    b.response(rid, {})
    return b


def resume_without_cursor_active() -> TraceBuilder:
    b = TraceBuilder()
    _new_session(b, "s")
    rid = b.resume("s", cursor=None)
    b.update("s", "agent_message_chunk", messageId="m")
    b.state("s")
    b.response(rid, {})
    return b


def message_id_missing() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 2, message_ids=False)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def message_id_missing_v1() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    b.response(rid, {})
    return b


def load_updates_after_response() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    b.response(rid, {})
    b.update("s", "agent_message_chunk")
    b.update("s", "user_message_chunk")
    return b


def updates_after_load_and_next_request() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    b.response(rid, {})
    b.update("s", "available_commands_update", availableCommands=[])
    pid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.update("s", "agent_message_chunk")
    b.response(pid, {"stopReason": "end_turn"})
    return b


def non_json_line() -> TraceBuilder:
    b = TraceBuilder()
    b.text("agent", "Starting agent v1.2...")
    b.send("client", {"hello": "world"})
    b.send("agent", [])
    b.text("agent", "\r")
    b.text("client", "")
    b.text("stderr", "not json but stderr is free text")
    return b


def batch_line() -> TraceBuilder:
    b = TraceBuilder()
    b.send(
        "client",
        [{"jsonrpc": "2.0", "id": 50, "method": "x/y"}, {"jsonrpc": "2.0", "method": "x/z"}],
    )
    b.response(50, {})
    return b


def unanswered_request() -> TraceBuilder:
    b = TraceBuilder()
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    return b


def orphan_response() -> TraceBuilder:
    b = TraceBuilder()
    b.response(99, {})
    b.send("agent", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
    return b


def duplicate_request_id() -> TraceBuilder:
    b = TraceBuilder()
    b.request("a/b", id=5)
    b.request("a/c", id=5)
    b.response(5, {})
    b.response(5, {})
    b.request("a/d", id=5)
    b.response(5, {})
    return b


def cancel_unanswered() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.notify("$/cancel_request", {"requestId": rid}, src="client")
    return b


def cancel_answered() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.notify("$/cancel_request", {"requestId": rid}, src="client")
    b.error(rid, -32800)
    return b


def _prompt_turn(b: TraceBuilder, updates: list[dict], v1_result: dict | None = None) -> None:
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    for fields in updates:
        b.update("s", **fields)
    b.response(rid, v1_result or {"stopReason": "end_turn"})


def acceptance_ok() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _new_session(b, "s")
    _prompt_turn(
        b, [{"kind": "session_info_update", "_meta": ACCEPT}, {"kind": "agent_message_chunk"}]
    )
    _prompt_turn(b, [{"kind": "session_info_update", "_meta": ACCEPT}])
    return b


def acceptance_duplicate() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _prompt_turn(b, [{"kind": "session_info_update", "_meta": ACCEPT}] * 2)
    return b


def acceptance_carries_info() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _prompt_turn(b, [{"kind": "session_info_update", "_meta": ACCEPT, "title": "x"}])
    return b


def acceptance_outside_prompt() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _prompt_turn(b, [])
    b.update("s", "session_info_update", _meta=ACCEPT)
    return b


def acceptance_in_v2_turn_before_idle() -> TraceBuilder:
    b = TraceBuilder(protocol=2)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(rid, {})
    b.state("s", state="running")
    b.update("s", "session_info_update", _meta=ACCEPT)
    b.state("s", stopReason="end_turn")
    b.update("s", "session_info_update", _meta=ACCEPT)
    return b


def client_response_with_resume_id() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    pid = b.request("session/request_permission", {"sessionId": "other"}, id=rid, src="agent")
    b.history("s", 1)
    b.response(pid, {"outcome": {"outcome": "cancelled"}}, src="client")
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def two_resumes_each_marked() -> TraceBuilder:
    b = TraceBuilder()
    _resume_ok(b)
    _resume_ok(b)
    return b


def request_after_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    pid = b.request("session/request_permission", {"sessionId": "s"}, src="agent")
    b.response(pid, {"outcome": {"outcome": "cancelled"}}, src="client")
    b.state("s")
    b.response(rid, {})
    return b


def resume_error_without_snapshot() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor=None)
    b.error(rid, -32002)
    return b


def prompt_chunks_without_message_id_after_replay() -> TraceBuilder:
    b = TraceBuilder()
    _resume_ok(b)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(rid, {})
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "hi"})
    b.state("s", stopReason="end_turn")
    return b


def import_ambiguous() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    head = orjson.loads(b.lines[0])
    head["ambiguous"] = [{"line": 1, "seq": 1, "reason": "unknown method _x/ping"}]
    b.lines[0] = orjson.dumps(head)
    b.notify("_x/ping", {}, src="client")
    return b


def import_unknown_code() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    rid = b.request("session/load", {"sessionId": "s", "cwd": "/", "mcpServers": []})
    seq = b.send("agent", {"jsonrpc": "2.0", "id": rid, "error": {"message": "Invalid params"}})
    head = orjson.loads(b.lines[0])
    head["error_code_unknown"] = [{"line": 2, "seq": seq, "message": "Invalid params"}]
    b.lines[0] = orjson.dumps(head)
    return b


UUID = {"claudeCode": {"assistantMessageUuid": "u-1"}}


def uuid_on_cancelled_v1() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _prompt_turn(b, [], {"stopReason": "cancelled", "_meta": UUID})
    return b


def uuid_on_cancelled_v2() -> TraceBuilder:
    b = TraceBuilder(protocol=2)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(rid, {})
    b.state("s", stopReason="cancelled", _meta=UUID)
    return b


def uuid_on_end_turn() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _prompt_turn(b, [], {"stopReason": "end_turn", "_meta": UUID})
    return b


def uuid_on_resume_snapshot() -> TraceBuilder:
    b = TraceBuilder(protocol=2)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(rid, {})
    r2 = b.resume("s", cursor=None)
    b.state("s", stopReason="cancelled", _meta=UUID)
    b.response(r2, {})
    return b


# ---------------------------------------------------------------- rules.md, clarified (issue 12)


def updates_with_rejection() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.error(rid, -32602)
    return b


def updates_marker_and_rejection() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    b.error(rid, -32602)
    return b


def updates_then_other_error() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.error(rid, -32603)
    return b


def live_only_then_rejection() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s", cursor={"type": "_vendor_from"})
    b.update("s", "notice", message="n")
    b.error(rid, -32602)
    return b


def v1_load_history_then_rejection() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    b.error(rid, -32602)
    return b


def _grandchildren(b: TraceBuilder, mark_grandchild: bool) -> Any:
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c1")
    b.update("c1", "subagent_update", sessionId="c2")
    b.history("c2", 1)
    if mark_grandchild:
        b.marker("c2")
    b.marker("c1")
    b.marker("p")
    b.state("p")
    return rid


def grandchild_marked() -> TraceBuilder:
    b = TraceBuilder()
    b.response(_grandchildren(b, True), {})
    return b


def grandchild_marker_missing() -> TraceBuilder:
    b = TraceBuilder()
    b.response(_grandchildren(b, False), {})
    return b


def grandchild_live_before_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c1")
    b.update("c1", "subagent_update", sessionId="c2")
    b.update("c2", "usage_update", used=1, size=2)
    b.marker("c2")
    b.marker("c1")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def announced_by_uncovered_session() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("x", "subagent_update", sessionId="c")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def duplicate_while_other_resume_open() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("a")
    r2 = b.resume("b")
    b.marker("a")
    b.marker("a")
    b.marker("b")
    b.state("a")
    b.response(r1, {})
    b.state("b")
    b.response(r2, {})
    return b


def second_marker_after_response_other_open() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("a")
    r2 = b.resume("b")
    b.marker("a")
    b.state("a")
    b.response(r1, {})
    b.marker("a")
    b.marker("b")
    b.state("b")
    b.response(r2, {})
    return b


def concurrent_replay_of_covered_child() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    r2 = b.resume("c")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(r1, {})
    b.marker("c")
    b.state("c")
    b.response(r2, {})
    return b


def resume_child_after_parent_answered() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(r1, {})
    _resume_ok(b, "c")
    return b


def resume_without_cursor_while_replay_pending() -> TraceBuilder:
    b = TraceBuilder()
    r1 = b.resume("s")
    r2 = b.resume("s", cursor=None)
    b.marker("s")
    b.state("s")
    b.response(r1, {})
    b.state("s")
    b.response(r2, {})
    return b


def live_on_new_child_of_active_parent() -> TraceBuilder:
    b = TraceBuilder()
    _new_session(b, "p")
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.update("c", "notice", message="n")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def live_on_active_parent_child_not_active() -> TraceBuilder:
    b = TraceBuilder()
    _new_session(b, "p")
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.update("p", "notice", message="n")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def live_on_child_active_before_resume() -> TraceBuilder:
    b = TraceBuilder()
    _new_session(b, "c")
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.update("c", "notice", message="n")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def live_on_child_activated_inside_window() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    _new_session(b, "c")
    b.update("p", "subagent_update", sessionId="c")
    b.update("c", "notice", message="n")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def child_marked_before_announce_counts() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("p")
    b.marker("c")
    b.update("p", "subagent_update", sessionId="c")
    b.update("c", "notice", message="n")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def child_marker_in_an_earlier_window() -> TraceBuilder:
    b = TraceBuilder()
    _resume_ok(b, "x")
    b.marker("c")
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.marker("c")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    return b


def batch_marker_then_response() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    state = _update_msg("s", {"sessionUpdate": "state_update", "state": "idle"})
    b.send("agent", [_marker_msg("s"), state, {"jsonrpc": "2.0", "id": rid, "result": {}}])
    return b


def batch_response_then_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.state("s")
    b.send("agent", [{"jsonrpc": "2.0", "id": rid, "result": {}}, _marker_msg("s")])
    return b


def batch_live_then_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    live = _update_msg("s", {"sessionUpdate": "notice", "message": "n"})
    b.send("agent", [live, _marker_msg("s")])
    b.state("s")
    b.response(rid, {})
    return b


def batch_marker_then_live() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    live = _update_msg("s", {"sessionUpdate": "notice", "message": "n"})
    b.send("agent", [_marker_msg("s"), live])
    b.state("s")
    b.response(rid, {})
    return b


def _update_msg(session: str, update: dict[str, Any]) -> dict[str, Any]:
    params = {"sessionId": session, "update": update}
    return {"jsonrpc": "2.0", "method": "session/update", "params": params}


def _marker_msg(session: str) -> dict[str, Any]:
    return _update_msg(session, {"sessionUpdate": "replay_complete"})


def v2_turn_error_then_acceptance() -> TraceBuilder:
    b = TraceBuilder(protocol=2)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.error(rid, -32603)
    b.update("s", "session_info_update", _meta=ACCEPT)
    return b


def v1_turn_error_then_acceptance() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.error(rid, -32603)
    b.update("s", "session_info_update", _meta=ACCEPT)
    return b


def v2_turn_accepted_then_acceptance() -> TraceBuilder:
    b = TraceBuilder(protocol=2)
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.response(rid, {})
    b.update("s", "session_info_update", _meta=ACCEPT)
    b.state("s", stopReason="end_turn")
    return b


# ---------------------------------------------------------------- replay fidelity (rules.md)


def _text(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def _live_turns(b: TraceBuilder, n: int = 2, *, tool: str = "") -> None:
    """session/new of "s" and `n` v2 turns: user u{i}, agent a{i}, and a tool call if asked."""
    _new_session(b, "s")
    for i in range(n):
        rid = b.request("session/prompt", {"sessionId": "s", "prompt": _text(f"q{i}")})
        b.response(rid, {"messageId": f"u{i}"})
        b.update("s", "user_message", messageId=f"u{i}", content=_text(f"q{i}"))
        b.update("s", "agent_message", messageId=f"a{i}", content=_text(f"a{i}"))
        if tool:
            b.update("s", "tool_call", toolCallId=f"t{i}", status="completed", rawOutput=tool)
        b.state("s", stopReason="end_turn")


def _fidelity_resume(b: TraceBuilder, updates: list[tuple[str, dict[str, Any]]]) -> None:
    """A marked v2 replay of "s" carrying `updates` (kind, fields)."""
    rid = b.resume("s")
    for kind, fields in updates:
        b.update("s", kind, **fields)
    b.marker("s")
    b.state("s")
    b.response(rid, {})


def _replayed(ids: str = "", order: tuple[int, ...] = (0, 1), tool: str = "") -> list[Any]:
    out: list[tuple[str, dict[str, Any]]] = []
    for i in order:
        out.append(("user_message", {"messageId": f"u{i}{ids}", "content": _text(f"q{i}")}))
        out.append(("agent_message", {"messageId": f"a{i}{ids}", "content": _text(f"a{i}")}))
        if tool:
            out.append(
                ("tool_call", {"toolCallId": f"t{i}", "status": "completed", "rawOutput": tool})
            )
    return out


def faithful_replay() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b, tool="output")
    _fidelity_resume(b, _replayed(tool="output"))
    return b


def replay_new_agent_ids() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    updates = _replayed()
    updates[1] = ("agent_message", {"messageId": "a0-again", "content": _text("a0")})
    _fidelity_resume(b, updates)
    return b


def replay_new_prompt_id() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    updates = _replayed()
    updates[0] = ("user_message", {"messageId": "u0-again", "content": _text("q0")})
    _fidelity_resume(b, updates)
    return b


def replay_chunk_before_message() -> TraceBuilder:
    b = TraceBuilder()
    _fidelity_resume(
        b,
        [
            ("agent_message_chunk", {"messageId": "m", "content": {"type": "text", "text": "x"}}),
            ("agent_message", {"messageId": "m", "content": []}),
        ],
    )
    return b


def replay_chunk_after_message() -> TraceBuilder:
    b = TraceBuilder()
    _fidelity_resume(
        b,
        [
            ("agent_message", {"messageId": "m", "content": []}),
            ("agent_message_chunk", {"messageId": "m", "content": {"type": "text", "text": "x"}}),
        ],
    )
    return b


def replay_duplicate_message() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    updates = _replayed()
    _fidelity_resume(b, [*updates, updates[1]])
    return b


def replay_reordered() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    _fidelity_resume(b, _replayed(order=(1, 0)))
    return b


def replay_truncated_tool() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b, tool="the whole output")
    _fidelity_resume(b, _replayed(tool="the whole"))
    return b


def replay_missing_turn() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    _fidelity_resume(b, _replayed(order=(0,)))
    return b


def replay_extra_message() -> TraceBuilder:
    b = TraceBuilder()
    _live_turns(b)
    extra = ("agent_message", {"messageId": "z", "content": _text("never said")})
    _fidelity_resume(b, [*_replayed(), extra])
    return b


def replay_extra_without_new() -> TraceBuilder:
    """The session's session/new is not in the trace: an extra message may be older history."""
    b = TraceBuilder()
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": _text("q0")})
    b.response(rid, {"messageId": "u0"})
    b.update("s", "user_message", messageId="u0", content=_text("q0"))
    b.state("s", stopReason="end_turn")
    older = ("agent_message", {"messageId": "z", "content": _text("older")})
    _fidelity_resume(b, [older, ("user_message", {"messageId": "u0", "content": _text("q0")})])
    return b


def _weighed_resume(before: Callable[[TraceBuilder], None]) -> TraceBuilder:
    """A marked, answered replay whose updates `before` writes (rules.md "Replay weight")."""
    b = TraceBuilder()
    rid = b.resume("s")
    before(b)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def line_over_a_client_limit() -> TraceBuilder:
    return _weighed_resume(lambda b: b.update("s", "plan", entries=[{"content": "x" * 70_000}]))


def silence_past_a_deadline() -> TraceBuilder:
    return _weighed_resume(
        lambda b: b.update("s", "user_message", dt=2_500, messageId="u", content=[])
    )


def replay_outlasts_the_quiet_window() -> TraceBuilder:
    def paused(b: TraceBuilder) -> None:
        b.update("s", "user_message", messageId="u", content=[])
        b.update("s", "agent_message", dt=300, messageId="a", content=[])

    return _weighed_resume(paused)


CASES: list[tuple[Callable[[], TraceBuilder], dict[str, str]]] = [
    (correct_v2_with_children, {}),
    (correct_v1_load, {}),
    (long_prompt_session, {}),
    (marker_missing, {"marker-missing": "error"}),
    (marker_missing_then_late, {"marker-missing": "error", "marker-late": "error"}),
    (marker_duplicate, {"marker-duplicate": "error"}),
    (marker_unexpected_on_new, {"marker-unexpected": "error"}),
    (marker_unexpected_without_cursor, {"marker-unexpected": "error"}),
    (marker_after_complete_resume_without_cursor, {"marker-late": "error"}),
    (marker_with_rejection, {"marker-with-rejection": "error"}),
    (rejection_without_marker, {}),
    (live_before_marker, {"live-before-marker": "error"}),
    (live_before_marker_active, {"live-before-marker": "warning"}),
    (live_right_after_marker, {}),
    (live_before_missing_marker, {"marker-missing": "error"}),
    (request_before_marker, {"request-before-marker": "warning"}),
    (child_marker_missing, {"child-marker-missing": "error"}),
    (child_marker_before_announce, {"child-marker-before-announce": "error"}),
    (unannounced_child_marker, {"marker-unexpected": "error"}),
    (concurrent_replay, {"concurrent-replay": "warning"}),
    (concurrent_different_sessions, {}),
    (state_snapshot_missing, {"state-snapshot-missing": "error"}),
    (state_snapshot_missing_v1, {}),
    (replay_without_cursor, {"replay-without-cursor": "warning"}),
    (replay_without_cursor_v1, {"replay-without-cursor": "warning"}),
    (resume_without_cursor_active, {}),
    (message_id_missing, {"message-id-missing": "error"}),
    (message_id_missing_v1, {}),
    (load_updates_after_response, {"load-updates-after-response": "error"}),
    (updates_after_load_and_next_request, {}),
    (non_json_line, {"non-json-line": "error"}),
    (batch_line, {}),
    (unanswered_request, {"unanswered-request": "warning"}),
    (orphan_response, {"orphan-response": "warning"}),
    (duplicate_request_id, {"duplicate-request-id": "warning"}),
    (cancel_unanswered, {"cancel-unanswered": "error", "unanswered-request": "warning"}),
    (cancel_answered, {}),
    (acceptance_ok, {}),
    (acceptance_duplicate, {"acceptance-duplicate": "warning"}),
    (acceptance_carries_info, {"acceptance-carries-info": "warning"}),
    (acceptance_outside_prompt, {"acceptance-outside-prompt": "warning"}),
    (acceptance_in_v2_turn_before_idle, {"acceptance-outside-prompt": "warning"}),
    (uuid_on_cancelled_v1, {"uuid-on-cancelled": "warning"}),
    (uuid_on_cancelled_v2, {"uuid-on-cancelled": "warning"}),
    (uuid_on_end_turn, {}),
    (uuid_on_resume_snapshot, {}),
    (client_response_with_resume_id, {}),
    (import_ambiguous, {"import-ambiguous-direction": "info"}),
    (import_unknown_code, {"import-unknown-error-code": "info"}),
    (two_resumes_each_marked, {}),
    (request_after_marker, {}),
    (resume_error_without_snapshot, {}),
    (prompt_chunks_without_message_id_after_replay, {}),
    (updates_with_rejection, {"updates-with-rejection": "error"}),
    (
        updates_marker_and_rejection,
        {"updates-with-rejection": "error", "marker-with-rejection": "error"},
    ),
    (updates_then_other_error, {}),
    (live_only_then_rejection, {}),
    (v1_load_history_then_rejection, {}),
    (grandchild_marked, {}),
    (grandchild_marker_missing, {"child-marker-missing": "error"}),
    (grandchild_live_before_marker, {"live-before-marker": "error"}),
    (announced_by_uncovered_session, {"marker-unexpected": "error"}),
    (duplicate_while_other_resume_open, {"marker-duplicate": "error"}),
    (second_marker_after_response_other_open, {"marker-late": "error"}),
    (concurrent_replay_of_covered_child, {"concurrent-replay": "warning"}),
    (resume_child_after_parent_answered, {}),
    (resume_without_cursor_while_replay_pending, {}),
    (live_on_new_child_of_active_parent, {"live-before-marker": "error"}),
    (live_on_active_parent_child_not_active, {"live-before-marker": "warning"}),
    (live_on_child_active_before_resume, {"live-before-marker": "warning"}),
    (live_on_child_activated_inside_window, {"live-before-marker": "error"}),
    (child_marked_before_announce_counts, {"child-marker-before-announce": "error"}),
    (child_marker_in_an_earlier_window, {"marker-unexpected": "error"}),
    (batch_marker_then_response, {}),
    (batch_response_then_marker, {"marker-missing": "error", "marker-late": "error"}),
    (batch_live_then_marker, {"live-before-marker": "error"}),
    (batch_marker_then_live, {}),
    (v2_turn_error_then_acceptance, {"acceptance-outside-prompt": "warning"}),
    (v1_turn_error_then_acceptance, {"acceptance-outside-prompt": "warning"}),
    (v2_turn_accepted_then_acceptance, {}),
    (faithful_replay, {}),
    (replay_new_agent_ids, {"replay-id-unstable": "warning"}),
    (replay_new_prompt_id, {"replay-prompt-id-changed": "error"}),
    (replay_chunk_before_message, {"replay-chunk-before-message": "error"}),
    (replay_chunk_after_message, {}),
    (replay_duplicate_message, {"replay-duplicate-message": "warning"}),
    (replay_reordered, {"replay-reordered": "warning"}),
    (replay_truncated_tool, {"replay-truncated-content": "warning"}),
    (replay_missing_turn, {"replay-missing-messages": "info"}),
    (replay_extra_message, {"replay-extra-messages": "info"}),
    (replay_extra_without_new, {}),
    (line_over_a_client_limit, {"frame-over-client-limit": "warning"}),
    (silence_past_a_deadline, {"silence-past-client-deadline": "info"}),
    (replay_outlasts_the_quiet_window, {"replay-outlasts-quiet-window": "info"}),
]


def _findings(b: TraceBuilder, tmp_path: Path) -> pl.DataFrame:
    """The findings of the replay, wire and profile rules: the traces here are short-hand, not
    schema-valid messages (tests/analysis/test_schema.py judges messages)."""
    return acp_trace.check(b.write(tmp_path / "t.jsonl"), schema=False)


@pytest.mark.parametrize(("build", "expected"), CASES, ids=[c[0].__name__ for c in CASES])
def test_rule_cases(
    tmp_path: Path, build: Callable[[], TraceBuilder], expected: dict[str, str]
) -> None:
    """Each breaking trace yields exactly its rules (with their severities); near misses yield none."""
    found = _findings(build(), tmp_path)
    assert dict(found.select("rule", "severity").unique().iter_rows()) == expected


def test_every_rule_has_a_breaking_case() -> None:
    """The case table breaks every rule of the registry at least once (the schema rules in
    test_schema.py, the remote transports' in test_remote_rules.py)."""
    broken = {rule for _, expected in CASES + CASES_28 for rule in expected}
    remote = {rule for rule in RULES if rule.startswith("remote-")}
    assert broken == set(RULES) - {"schema-invalid", "caused-error"} - remote


def test_findings_point_at_the_record(tmp_path: Path) -> None:
    """A finding names the trace, session, seq and time of the record it points at."""
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.state("s")
    seq = b.response(rid, {})
    row = _findings(b, tmp_path).row(0, named=True)
    assert (row["rule"], row["session"], row["seq"]) == ("marker-missing", "s", seq)
    assert row["trace"].endswith("t.jsonl") and row["t_ms"] == float(seq)


def test_messages_say_expected_and_found(tmp_path: Path) -> None:
    """Messages name what came, where it came and what was expected."""
    found = _findings(live_before_marker(), tmp_path)
    message = found["message"][0]
    assert "available_commands_update" in message and "seq" in message and "before" in message
    assert "must wait" in message


def test_non_json_lines_are_each_reported(tmp_path: Path) -> None:
    """Every non-blank non-JSON-RPC line of agent or client is a finding; blank lines and stderr are not."""
    found = _findings(non_json_line(), tmp_path)
    assert found.height == 3


def test_message_id_missing_is_one_finding_per_replay(tmp_path: Path) -> None:
    """A replay without messageIds gives one finding at the first update, counting the rest."""
    found = _findings(message_id_missing(), tmp_path)
    assert found.height == 1 and "3 more" in found["message"][0]


def test_rule_and_severity_filters(tmp_path: Path) -> None:
    """--rule keeps only the named rules and --min-severity drops lower severities."""
    path = concurrent_replay().write(tmp_path / "t.jsonl")
    assert acp_trace.check(path, min_severity="error", schema=False).height == 0
    assert acp_trace.check(path, rules=["marker-missing"]).height == 0
    assert acp_trace.check(path, rules=["concurrent-replay"]).height == 1


def test_marker_meta_makes_v1_markers_checked(tmp_path: Path) -> None:
    """With --marker-meta, a v1 load without the vendor marker is marker-missing."""
    path = correct_v1_load().write(tmp_path / "t.jsonl")
    assert acp_trace.check(path).height == 0
    found = acp_trace.check(path, marker_meta="vendor.replayDone")
    assert found["rule"].to_list() == ["marker-missing"]


def test_damaged_trace_does_not_crash(tmp_path: Path) -> None:
    """Damaged lines, unknown kinds, a cut last line and odd ids are reported, never fatal."""
    b = correct_v2_with_children()
    b.lines.insert(3, b"{broken json")
    b.lines.insert(5, b'{"seq": "x"}')
    b.send("agent", {"jsonrpc": "2.0", "method": "weird/thing", "params": [1, 2]})
    b.send("agent", {"jsonrpc": "2.0", "id": {"obj": 1}, "result": None})
    b.send(
        "agent",
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": 5, "update": "x"}},
    )
    path = b.write(tmp_path / "t.jsonl")
    path.write_bytes(path.read_bytes() + b'{"seq": 999, "t_ns": 5, "src": "ag')
    a = acp_trace.analyze(path)
    assert a.traces()["malformed"].to_list() == [3]
    allowed = {"orphan-response", "non-json-line", "schema-invalid"}
    assert set(a.findings()["rule"].to_list()) <= allowed


# ---------------------------------------------------------------- issue 28: vendor events,
# stable subagents, suggestions, the recorder's losses, ids beyond 64 bits

AIR_CAPS = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["loadReplayEnd"]}}}}
AIR_EVENT = {"jetbrains": {"air": {"version": 1, "loadReplayEnd": True}}}


def _air_load(b: TraceBuilder, event: bool = True, live_first: bool = False) -> None:
    """A v1 load as claude-agent-acp 0.101.0 answers a client with the AIR capability."""
    rid = b.load("s")
    if live_first:
        b.update("s", "available_commands_update", availableCommands=[])
    b.update("s", "user_message_chunk", content={"type": "text", "text": "q"})
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "a"})
    if event:
        b.update("s", "session_info_update", _meta=AIR_EVENT)
    b.response(rid, {})


def air_v1_load_marked() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _air_load(b)
    _air_load(b)
    return b


def air_v1_live_before_event() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _air_load(b, live_first=True)
    return b


def air_v1_promise_broken() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _air_load(b)
    _air_load(b, event=False)
    return b


def air_v1_never_sent() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _air_load(b, event=False)
    _air_load(b, event=False)
    return b


def air_v1_not_opted_in() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _air_load(b)
    _air_load(b, event=False)
    return b


def air_v1_event_outside_a_load() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _new_session(b, "s")
    b.update("s", "session_info_update", _meta=AIR_EVENT)
    return b


def air_v2_without_marker() -> TraceBuilder:
    b = TraceBuilder(capabilities=AIR_CAPS)
    rid = b.resume("s")
    b.history("s", 1)
    b.update("s", "session_info_update", _meta=AIR_EVENT)
    b.state("s")
    b.response(rid, {})
    return b


def air_v2_event_before_marker() -> TraceBuilder:
    b = TraceBuilder(capabilities=AIR_CAPS)
    rid = b.resume("s")
    b.history("s", 1)
    b.update("s", "session_info_update", _meta=AIR_EVENT)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def air_meta_without_the_event() -> TraceBuilder:
    """AIR metadata on a replayed tool call is not the end-of-replay event."""
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    _air_load(b)
    rid = b.load("s")
    b.update("s", "user_message_chunk", content={"type": "text", "text": "q"})  # the same history
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "a"})
    b.update("s", "tool_call", toolCallId="t", _meta={"jetbrains": {"air": {"commandTitle": "ls"}}})
    b.update("s", "session_info_update", _meta=AIR_EVENT)
    b.response(rid, {})
    return b


def _child_session(b: TraceBuilder) -> None:
    _new_session(b, "p")
    b.response(b.request("session/prompt", {"sessionId": "p", "prompt": []}), {})


def child_update_before_announce() -> TraceBuilder:
    b = TraceBuilder()
    _child_session(b)
    b.update("c", "usage_update", used=1)
    b.update("c", "state_update", state="running")
    b.update("p", "subagent_update", sessionId="c", title="helper")
    return b


def child_request_before_announce() -> TraceBuilder:
    b = TraceBuilder()
    _child_session(b)
    pid = b.request("session/request_permission", {"sessionId": "c"}, src="agent")
    b.response(pid, {"outcome": {"outcome": "cancelled"}}, src="client")
    b.update("p", "subagent_update", sessionId="c")
    return b


def child_update_after_announce() -> TraceBuilder:
    b = TraceBuilder()
    _child_session(b)
    b.update("p", "subagent_update", sessionId="c")
    b.update("c", "usage_update", used=1)
    b.update("p", "subagent_update", sessionId="c", title="renamed")
    return b


def child_unknown_kind_before_announce() -> TraceBuilder:
    """claude-agent-acp's own kinds (no schema names them) are never flagged."""
    b = TraceBuilder()
    _child_session(b)
    b.update("c", "subagent_spawned")
    b.update("p", "subagent_state_update", subagentId="c")
    b.update("c", "async_task_started")
    b.update("p", "subagent_update", sessionId="c")
    return b


def live_on_never_announced_session() -> TraceBuilder:
    b = TraceBuilder()
    _child_session(b)
    b.update("x", "usage_update", used=1)
    return b


def subagents_not_advertised() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _child_session(b)
    b.update("p", "subagent_update", sessionId="c")
    b.update("p", "session_message", messageId="m")
    return b


def subagents_advertised() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities={"subagents": {}})
    _child_session(b)
    b.update("p", "subagent_update", sessionId="c")
    return b


def subagents_advertised_null() -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities={"subagents": None})
    _child_session(b)
    b.update("p", "subagent_update", sessionId="c")
    return b


def suggestions_in_v1_load() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk", content={"type": "text", "text": "q"})
    b.update("s", "prompt_suggestions_update", suggestions=[])
    b.response(rid, {})
    return b


def suggestions_before_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.update("s", "prompt_suggestions_update", suggestions=[])
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    return b


def suggestions_after_marker() -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 1)
    b.marker("s")
    b.update("s", "prompt_suggestions_update", suggestions=[])
    b.state("s")
    b.response(rid, {})
    return b


def suggestions_in_a_prompt_turn() -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    _new_session(b, "s")
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.update("s", "prompt_suggestions_update", suggestions=[])
    b.response(rid, {"stopReason": "end_turn"})
    return b


def _marker_missing_with(
    loss: Callable[[TraceBuilder], None], before: bool = False
) -> TraceBuilder:
    b = TraceBuilder()
    if before:
        loss(b)
    rid = b.resume("s")
    b.history("s", 1)
    if not before:
        loss(b)
    b.state("s")
    b.response(rid, {})
    return b


def _dropped(stream: str) -> Callable[[TraceBuilder], None]:
    return lambda b: b.event("dropped", count=3, stream=stream) and None


def _cut(b: TraceBuilder) -> None:
    b.raw(
        "agent", {"text": '{"jsonrpc":"2.0","method":"session/upd', "truncated": True, "bytes": 99}
    )


def marker_missing_records_dropped() -> TraceBuilder:
    return _marker_missing_with(_dropped("agent"))


def marker_missing_record_cut() -> TraceBuilder:
    return _marker_missing_with(_cut)


def marker_missing_stderr_dropped() -> TraceBuilder:
    return _marker_missing_with(_dropped("stderr"))


def marker_missing_dropped_before_window() -> TraceBuilder:
    return _marker_missing_with(_dropped("agent"), before=True)


CASES_28: list[tuple[Callable[[], TraceBuilder], dict[str, str]]] = [
    (air_v1_load_marked, {}),
    (air_v1_live_before_event, {"live-before-marker": "error"}),
    (air_v1_promise_broken, {"marker-missing": "warning"}),
    (air_v1_never_sent, {}),
    (air_v1_not_opted_in, {}),
    (air_v1_event_outside_a_load, {}),
    (air_v2_without_marker, {"marker-missing": "error"}),
    (air_v2_event_before_marker, {}),
    (air_meta_without_the_event, {}),
    (child_update_before_announce, {"child-update-before-announce": "error"}),
    (child_request_before_announce, {"child-update-before-announce": "error"}),
    (child_update_after_announce, {}),
    (child_unknown_kind_before_announce, {}),
    (live_on_never_announced_session, {}),
    (subagents_not_advertised, {"subagents-not-advertised": "error"}),
    (subagents_advertised, {}),
    (subagents_advertised_null, {"subagents-not-advertised": "error"}),
    (suggestions_in_v1_load, {"suggestions-in-replay": "warning"}),
    (
        suggestions_before_marker,
        {"suggestions-in-replay": "warning", "live-before-marker": "error"},
    ),
    (suggestions_after_marker, {}),
    (suggestions_in_a_prompt_turn, {}),
    (marker_missing_records_dropped, {"marker-missing": "warning"}),
    (marker_missing_record_cut, {"marker-missing": "warning"}),
    (marker_missing_stderr_dropped, {"marker-missing": "error"}),
    (marker_missing_dropped_before_window, {"marker-missing": "error"}),
]


@pytest.mark.parametrize(("build", "expected"), CASES_28, ids=[c[0].__name__ for c in CASES_28])
def test_issue_28_cases(
    tmp_path: Path, build: Callable[[], TraceBuilder], expected: dict[str, str]
) -> None:
    """The vendor-event, subagent, suggestion and loss cases yield exactly their rules."""
    found = _findings(build(), tmp_path)
    assert dict(found.select("rule", "severity").unique().iter_rows()) == expected


def test_promise_broken_names_the_vendor_event(tmp_path: Path) -> None:
    """The v1 marker-missing warning names the vendor event and where the agent first sent it."""
    found = _findings(air_v1_promise_broken(), tmp_path)
    message = found["message"][0]
    assert "jetbrains.air.loadReplayEnd" in message and "opted in" in message
    assert "at seq 6" in message  # the first load's event


def test_child_update_before_announce_counts_and_points(tmp_path: Path) -> None:
    """One finding per child, at its first early message, naming the announcement and the count."""
    found = _findings(child_update_before_announce(), tmp_path)
    row = found.row(0, named=True)
    assert found.height == 1 and row["session"] == "c"
    assert "usage_update" in row["message"] and "1 more" in row["message"]


def test_loss_qualifies_marker_findings(tmp_path: Path) -> None:
    """A marker finding in a window where the tap dropped records says how many and is a warning."""
    found = _findings(marker_missing_records_dropped(), tmp_path)
    message = found["message"][0]
    assert "lost 3 records" in message and "3 dropped" in message and "made a warning" in message
    cut = _findings(marker_missing_record_cut(), tmp_path)["message"][0]
    assert "lost 1 records in this window (1 cut)" in cut


def _raw_line(b: TraceBuilder, src: str, text: str) -> None:
    """A record whose message is written as given (ids beyond 64 bits, which orjson refuses)."""
    b.seq += 1
    b.t_ns += 1_000_000
    b.lines.append(f'{{"seq": {b.seq}, "t_ns": {b.t_ns}, "src": "{src}", "msg": {text}}}'.encode())


@pytest.mark.parametrize(("cancelled", "expected"), [(0, True), (1, False)])
def test_cancel_of_a_big_integer_id_is_exact(
    tmp_path: Path, cancelled: int, expected: bool
) -> None:
    """A $/cancel_request names a request id beyond 64 bits exactly: the id one more is
    another request (a float would merge the two)."""
    big = 2**70
    b = TraceBuilder()
    _raw_line(b, "client", f'{{"jsonrpc": "2.0", "id": {big}, "method": "session/prompt"}}')
    cancel = f'{{"requestId": {big + cancelled}}}'
    _raw_line(
        b, "client", f'{{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {cancel}}}'
    )
    found = _findings(b, tmp_path)
    assert ("cancel-unanswered" in set(found["rule"])) is expected
    if expected:
        assert str(big) in found.filter(pl.col("rule") == "cancel-unanswered")["message"][0]
