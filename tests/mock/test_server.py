"""The mock agent on the wire: negotiation, matching requests to the recording, ids, asks, ends."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_trace.errors import InputError, UsageError
from acp_trace.mock import MockOptions, prepare
from mocklive import init, updates
from tracebuilder import TraceBuilder

RESUME = {"sessionId": "s1", "cwd": "/w", "replayFrom": {"type": "start"}}


def test_a_resume_with_a_cursor_gets_the_recorded_one_with_a_cursor(
    live: Any, tmp_path: Path
) -> None:
    """A recording that opens a session (a resume without cursor), prompts, then replays it:
    a client that resumes with a cursor first gets the recorded replay, not the opening."""
    t = TraceBuilder()
    rid = t.resume("s1", cursor=None)
    t.state("s1")
    t.response(rid, {})
    rid = t.resume("s1")
    t.history("s1", 1)
    t.marker("s1")
    t.response(rid, {})
    conn = live(t.write(tmp_path / "t.jsonl"))
    init(conn)
    got = conn.call("session/resume", {"sessionId": "s1", "replayFrom": {"type": "start"}}, id=7)
    kinds = [m["params"]["update"]["sessionUpdate"] for m in got if "params" in m]
    assert kinds == ["user_message", "agent_message", "replay_complete"]


def replay_trace(path: Path, protocol: int = 2, sid: str = "s1") -> Path:
    """initialize, then a replaying resume (v2) or load (v1) of `sid` with two turns."""
    t = TraceBuilder(protocol=protocol, agent="recorded-agent")
    rid = t.resume(sid) if protocol == 2 else t.load(sid)
    t.history(sid, 2, message_ids=protocol == 2)
    if protocol == 2:
        t.marker(sid)
        t.state(sid)
    t.response(rid)
    return t.write(path)


@pytest.mark.parametrize(
    ("recorded", "asked", "answer"),
    [
        ((2,), 2, 2),
        ((1,), 2, 1),  # negotiated down, as a v1 agent would
        ((1, 2), 2, 2),
        ((1, 2), 1, 1),
        ((1, 2), 5, 2),
        ((2,), 1, None),  # nothing at or below 1: -32022
    ],
)
def test_initialize_picks_the_highest_recorded_version_the_client_accepts(
    live: Any, tmp_path: Path, recorded: tuple[int, ...], asked: int, answer: int | None
) -> None:
    """The recorded initialize result of the highest version <= the asked one, else -32022
    with the versions the recording holds."""
    traces = [replay_trace(tmp_path / f"v{v}.jsonl", v) for v in recorded]
    reply = init(live(*traces), asked)
    if answer is None:
        assert reply["error"]["code"] == -32022
        assert reply["error"]["data"] == {"requested": asked, "supported": list(recorded)}
        assert "holds version 2 only" in reply["error"]["message"]
    else:
        result = reply["result"]
        assert result["protocolVersion"] == answer
        assert result["info" if answer == 2 else "agentInfo"]["name"] == "recorded-agent"


def test_initialize_without_an_integer_version_is_invalid_params(live: Any, tmp_path: Path) -> None:
    """An initialize whose protocolVersion is not an integer gets -32602."""
    conn = live(replay_trace(tmp_path / "t.jsonl"))
    reply = conn.call("initialize", {"protocolVersion": "2"}, id=0)[-1]
    assert reply["error"]["code"] == -32602


def test_resume_replays_the_window_then_the_response_with_the_client_id(
    live: Any, tmp_path: Path
) -> None:
    """The recorded updates in order, then the recorded response carrying the live request id."""
    conn = live(replay_trace(tmp_path / "t.jsonl"))
    init(conn)
    got = conn.call("session/resume", RESUME, id="live-7")
    assert updates(got) == [
        ("s1", "user_message"),
        ("s1", "agent_message"),
        ("s1", "user_message"),
        ("s1", "agent_message"),
        ("s1", "replay_complete"),
        ("s1", "state_update"),
    ]
    assert got[-1] == {"jsonrpc": "2.0", "id": "live-7", "result": {}}


@pytest.mark.parametrize(
    ("sessions", "client_id", "served"),
    [
        ((), "s1", True),
        ((), "other", False),
        (("s1",), "other", True),
        (("other=s1",), "other", True),
        (("other=s1",), "third", False),
    ],
)
def test_session_ids_map_onto_recorded_sessions(
    live: Any, tmp_path: Path, sessions: tuple[str, ...], client_id: str, served: bool
) -> None:
    """A recorded id, or one `--session` maps, is replayed on the client's id; any other gets
    -32002 naming the recorded sessions."""
    conn = live(replay_trace(tmp_path / "t.jsonl"), sessions=sessions)
    init(conn)
    got = conn.call("session/resume", {**RESUME, "sessionId": client_id})
    if served:
        assert {sid for sid, _ in updates(got)} == {client_id}
        assert "result" in got[-1]
    else:
        assert got[-1]["error"]["code"] == -32002
        assert got[-1]["error"]["data"] == {"sessionId": client_id}
        assert "holds s1" in got[-1]["error"]["message"]


def test_updates_are_sent_as_recorded_unless_rewritten(live: Any, tmp_path: Path) -> None:
    """Unchanged lines go out byte for byte; a renamed session re-encodes only that line."""
    t = TraceBuilder()
    rid = t.resume("s1")
    exact = (
        b'{ "jsonrpc":"2.0", "method":"session/update",'
        b' "params":{"sessionId":"s1","update":{"sessionUpdate":"user_message","n":1.50}}}'
    )
    t.lines.append(b'{"seq":99,"t_ns":5000000,"src":"agent","msg":' + exact + b"}")
    t.response(rid)
    path = t.write(tmp_path / "t.jsonl")
    same = live(path)
    init(same)
    same.call("session/resume", RESUME, id=rid)
    renamed = live(path, sessions=("c9=s1",))
    init(renamed)
    renamed.call("session/resume", {**RESUME, "sessionId": "c9"}, id="other")
    assert same.raw[1] == exact + b"\n"
    assert same.raw[2] == b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % rid
    assert renamed.raw[1] == (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c9",'
        b'"update":{"sessionUpdate":"user_message","n":1.5}}}\n'
    )
    assert renamed.raw[2] == b'{"jsonrpc":"2.0","id":"other","result":{}}\n'


def test_a_request_the_recording_cannot_answer_gets_32601(live: Any, tmp_path: Path) -> None:
    """A method the recording lacks gets -32601 naming what the recording holds."""
    conn = live(replay_trace(tmp_path / "t.jsonl"))
    init(conn)
    reply = conn.call("session/new", {"cwd": "/w", "mcpServers": []})[-1]
    assert reply["error"]["code"] == -32601
    assert "no session/new" in reply["error"]["message"]
    assert "initialize, session/resume of s1" in reply["error"]["message"]


def test_requests_past_the_recorded_ones_get_the_last_again(live: Any, tmp_path: Path) -> None:
    """A second resume of a once-resumed session replays the same window, with a note."""
    conn = live(replay_trace(tmp_path / "t.jsonl"))
    init(conn)
    first = conn.call("session/resume", RESUME, id=1)
    second = conn.call("session/resume", RESUME, id=2)
    assert updates(first) == updates(second)
    assert conn.close() == 0
    assert "holds 1 session/resume of s1: request 2 and later ones get the last one again" in (
        conn.stderr
    )


def test_the_nth_request_gets_the_nth_recorded_answer(live: Any, tmp_path: Path) -> None:
    """Two recorded prompts answer the first and second live prompt, each with its updates."""
    t = TraceBuilder()
    for n in (1, 2):
        rid = t.request("session/prompt", {"sessionId": "s1", "prompt": []})
        t.update("s1", "agent_message_chunk", content={"type": "text", "text": f"turn {n}"})
        t.response(rid, {"stopReason": "end_turn"})
    conn = live(t.write(tmp_path / "t.jsonl"))
    init(conn)
    texts = [
        conn.call("session/prompt", {"sessionId": "s1", "prompt": []}, id=n)[0]["params"]["update"]
        for n in (5, 6)
    ]
    assert [u["content"]["text"] for u in texts] == ["turn 1", "turn 2"]


def test_agent_requests_get_fresh_ids_and_the_flow_waits_for_the_answer(
    live: Any, tmp_path: Path
) -> None:
    """A recorded permission request goes out with a fresh id; what followed the recorded
    answer comes only after the live answer."""
    t = TraceBuilder()
    rid = t.request("session/prompt", {"sessionId": "s1", "prompt": []})
    ask = t.request("session/request_permission", {"sessionId": "s1", "options": []}, src="agent")
    t.response(ask, {"outcome": {"outcome": "cancelled"}}, src="client")
    t.update("s1", "tool_call_update")
    t.response(rid, {"stopReason": "end_turn"})
    conn = live(t.write(tmp_path / "t.jsonl"), sessions=("c1=s1",))
    init(conn)
    conn.send(
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "c1"}}
    )
    request = conn.next()
    assert request["method"] == "session/request_permission"
    assert request["id"] != ask and request["params"]["sessionId"] == "c1"
    time.sleep(0.2)
    assert conn.lines.empty()  # nothing more until the client answers
    conn.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "x"}}})
    assert updates([conn.next()]) == [("c1", "tool_call_update")]
    assert conn.next()["result"] == {"stopReason": "end_turn"}


def test_an_unanswered_agent_request_times_out_with_an_error_saying_so(
    live: Any, tmp_path: Path
) -> None:
    """No answer within --answer-timeout: the request gets -32603 naming what was awaited."""
    t = TraceBuilder()
    rid = t.request("session/prompt", {"sessionId": "s1", "prompt": []})
    ask = t.request("fs/read_text_file", {"sessionId": "s1", "path": "/x"}, src="agent")
    t.response(ask, {"content": ""}, src="client")
    t.response(rid, {"stopReason": "end_turn"})
    conn = live(t.write(tmp_path / "t.jsonl"), answer_timeout=0.3)
    init(conn)
    got = conn.call("session/prompt", {"sessionId": "s1", "prompt": []}, id=9)
    assert got[0]["method"] == "fs/read_text_file"
    assert got[-1]["error"]["code"] == -32603
    assert "no answer from the client to fs/read_text_file request" in got[-1]["error"]["message"]
    assert "within 0.3 s" in conn.stderr


def test_cancel_request_stops_the_replay_with_32800(live: Any, tmp_path: Path) -> None:
    """`$/cancel_request` during a paced replay ends it with -32800 and sends no more updates."""
    t = TraceBuilder()
    rid = t.resume("s1")
    t.history("s1", 50, dt=100.0)  # 10 s of replay at speed 1
    t.marker("s1")
    t.response(rid)
    conn = live(t.write(tmp_path / "t.jsonl"), speed=1.0)
    init(conn)
    conn.send({"jsonrpc": "2.0", "id": 4, "method": "session/resume", "params": RESUME})
    assert conn.next()["method"] == "session/update"
    conn.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}})
    rest = []
    while "id" not in (msg := conn.next()):
        rest.append(msg)
    assert msg["error"]["code"] == -32800
    assert len(rest) < 10 and ("s1", "replay_complete") not in updates(rest)


def test_lines_that_are_not_json_and_stderr_are_replayed(live: Any, tmp_path: Path) -> None:
    """A recorded non-JSON stdout line and stderr lines come back on stdout and stderr."""
    t = TraceBuilder()
    rid = t.resume("s1")
    t.text("agent", "Traceback: oops")
    t.text("stderr", "[phase] read 3 ms")
    t.response(rid)
    conn = live(t.write(tmp_path / "t.jsonl"))
    init(conn)
    got = conn.call("session/resume", RESUME, id=rid)
    assert got[0] == b"Traceback: oops\n"
    assert "[phase] read 3 ms\n" in conn.stderr


def test_an_agent_that_went_away_in_the_recording_exits_with_its_code(
    live: Any, tmp_path: Path
) -> None:
    """The recorded agent's own exit (before the client closed) ends the mock with its code."""
    t = TraceBuilder()
    t.resume("s1")
    t.update("s1", "user_message")
    t.event("eof", stream="agent")
    t.event("exit", code=7, signal=None)
    conn = live(t.write(tmp_path / "t.jsonl"))
    init(conn)
    conn.send({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": RESUME})
    assert updates([conn.next()]) == [("s1", "user_message")]
    assert conn.next() is None
    conn.thread.join(10)
    assert conn.code == 7


def test_notifications_are_not_answered_and_garbage_gets_32700(live: Any, tmp_path: Path) -> None:
    """A client notification gets nothing; a line that is not JSON gets a parse error."""
    conn = live(replay_trace(tmp_path / "t.jsonl"))
    conn.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    conn.send(b"{oops\n")
    reply = conn.next()
    assert reply["id"] is None and reply["error"]["code"] == -32700


def test_a_trace_without_the_agent_side_is_refused(tmp_path: Path) -> None:
    """A recording with no agent message, or no answered initialize, is an InputError."""
    t = TraceBuilder(protocol=None)
    t.request("initialize", {"protocolVersion": 2})
    with pytest.raises(InputError, match="no message from the agent"):
        prepare(MockOptions((str(t.write(tmp_path / "a.jsonl")),)))
    t.notify("session/update", {"sessionId": "s1", "update": {"sessionUpdate": "notice"}})
    with pytest.raises(InputError, match="no initialize answered by the agent"):
        prepare(MockOptions((str(t.write(tmp_path / "b.jsonl")),)))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sessions": ("nope",)}, "the recording holds no session 'nope' (it holds s1)"),
        ({"sessions": ("a=nope",)}, "holds no session 'nope'"),
        ({"speed": -1.0}, "--speed -1: expected 0"),
        ({"speed": float("nan")}, "--speed nan"),
        ({"faults": ("marker-unexpected",)}, "unknown fault 'marker-unexpected'; known:"),
        ({"faults": ("truncate",)}, "expected truncate:N"),
        ({"faults": ("marker-late:3",)}, "marker-late takes no argument"),
        ({"gap": "soon"}, "gap 'soon'"),
        ({"answer_timeout": 0.0}, "--answer-timeout 0: expected seconds above 0"),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    """Unknown sessions, speeds, faults and gaps are refused before serving, saying why."""
    with pytest.raises(UsageError) as err:
        prepare(MockOptions((str(replay_trace(tmp_path / "t.jsonl")),), **options))
    assert message in str(err.value)


def test_left_out_lines_are_reported_on_stderr(live: Any, tmp_path: Path) -> None:
    """What reading left out (a damaged line) is said on stderr when serving starts."""
    path = replay_trace(tmp_path / "t.jsonl")
    path.write_bytes(path.read_bytes() + b"{damaged\n")
    conn = live(path)
    init(conn)
    conn.close()
    assert f"{path}: left out 1 damaged lines" in conn.stderr
    assert orjson.loads(orjson.dumps(conn.received))[0]["id"] == 0


def test_a_trace_without_initialize_beside_a_good_one_is_left_out_saying_so(
    live: Any, tmp_path: Path
) -> None:
    """Of two traces, one never answered initialize: the other is served, stderr names it."""
    bad = TraceBuilder(protocol=None)
    bad.update("s1", "user_message")
    bad_path = bad.write(tmp_path / "bad.jsonl")
    conn = live(bad_path, replay_trace(tmp_path / "good.jsonl"))
    assert init(conn)["result"]["protocolVersion"] == 2
    conn.close()
    assert f"{bad_path}: not served (no initialize answered by the agent)" in conn.stderr
