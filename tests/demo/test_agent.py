"""The demo agent: correct v1 and v2 traffic, error paths, children and every injectable fault.

Each test drives `python -m acp_trace demo-agent` with the demo client, saves every byte the
agent wrote and checks the raw messages in order, as compact tokens:
`h:S:kind` (history update on session S), `l:S:kind` (live update), `marker:S`,
`state:S:STATE`, `ok:ID` / `err:ID:CODE` (responses), `ask:METHOD` (agent requests),
`text` (a line that is not JSON).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_trace.demo.agent import CRASH_EXIT_CODE, FAULTS, AgentOptions
from acp_trace.demo.client import ClientOptions, ClientResult, run_client
from acp_trace.demo.history import fabricate, parse_gap, replay_plan
from acp_trace.jsonrpc import update_class

SID = "sess_demo"


def talk(
    tmp_path: Path, *agent_args: str, **client: Any
) -> tuple[ClientResult, list[Any], list[str]]:
    """Run the demo client against the demo agent; return the result, messages and tokens."""
    save = tmp_path / "received.bin"
    opts = ClientOptions(
        command=(sys.executable, "-m", "acp_trace", "demo-agent", *agent_args),
        cwd="/home/user/project",
        timeout=30,
        save=save,
        **{"session": SID, **client},
    )
    result = run_client(opts)
    messages: list[Any] = []
    for line in save.read_bytes().splitlines():
        try:
            messages.append(json.loads(line))
        except ValueError:
            messages.append(line.decode())
    return result, messages, [token(m) for m in messages]


def token(msg: Any) -> str:
    """A compact name for one received message."""
    if not isinstance(msg, dict):
        return "text"
    if "method" in msg and "id" in msg:
        return f"ask:{msg['method']}"
    if "method" not in msg:
        return f"err:{msg['id']}:{msg['error']['code']}" if "error" in msg else f"ok:{msg['id']}"
    sid, update = msg["params"]["sessionId"], msg["params"]["update"]
    kind = update["sessionUpdate"]
    cls = update_class(kind)
    if cls == "marker":
        return f"marker:{sid}"
    if kind == "state_update":
        return f"state:{sid}:{update['state']}"
    return f"{(cls or 'x')[0]}:{sid}:{kind}"


def replay_tokens(tokens: list[str], request_id: int) -> list[str]:
    """The tokens after the response before `request_id` up to and including its response."""
    end = next(
        i
        for i, t in enumerate(tokens)
        if t.split(":")[1] == str(request_id) and t.split(":")[0] in ("ok", "err")
    )
    start = max(
        (i for i, t in enumerate(tokens[:end]) if t.startswith(("ok:", "err:"))), default=-1
    )
    return tokens[start + 1 : end + 1]


def history(tokens: list[str], sid: str = SID) -> list[str]:
    """The history-kind tokens on one session."""
    return [t for t in tokens if t.startswith(f"h:{sid}:")]


# ---------------------------------------------------------------- correct behaviour


def test_v2_resume_replays_then_marker_then_state_then_response(tmp_path: Path) -> None:
    """A v2 resume with replayFrom start sends the history, the marker, an idle snapshot, the response."""
    _result, _msgs, tokens = talk(tmp_path, "--turns", "3")
    window = replay_tokens(tokens, 1)
    assert window == [
        *["h:sess_demo:user_message", "h:sess_demo:agent_message"] * 3,
        "marker:sess_demo",
        "state:sess_demo:idle",
        "ok:1",
    ]


def test_v2_message_ids_are_stable_across_resumes(tmp_path: Path) -> None:
    """Two resumes replay the same messages with the same messageIds."""
    _result, msgs, _tokens = talk(tmp_path, "--turns", "2", resumes=2)
    ids = [
        m["params"]["update"]["messageId"]
        for m in msgs
        if isinstance(m, dict) and "messageId" in m.get("params", {}).get("update", {})
    ]
    assert len(ids) == 8
    assert ids[:4] == ids[4:]
    assert len(set(ids[:4])) == 4


def test_v2_children_get_announced_replayed_and_marked(tmp_path: Path) -> None:
    """Each child is announced on the parent, replayed on its own id, then marked, before the parent's marker."""
    _result, msgs, tokens = talk(tmp_path, "--turns", "4", "--children", "2")
    window = replay_tokens(tokens, 1)
    for child in ("sess_demo-child0", "sess_demo-child1"):
        announce = next(
            i
            for i, m in enumerate(msgs)
            if isinstance(m, dict)
            and m.get("params", {}).get("update", {}).get("sessionId") == child
        )
        assert msgs[announce]["params"]["sessionId"] == SID
        child_tokens = [i for i, t in enumerate(tokens) if f":{child}" in t]
        assert min(child_tokens) > announce
        assert tokens[max(child_tokens)] == f"marker:{child}"
        assert len(history(tokens, child)) == 8
        assert tokens.index(f"marker:{child}") < tokens.index("marker:sess_demo")
    assert window[-3:] == ["marker:sess_demo", "state:sess_demo:idle", "ok:1"]
    assert window.count("h:sess_demo:subagent_update") == 2


def test_v1_load_replays_chunks_without_marker_then_responds(tmp_path: Path) -> None:
    """A v1 load replays v1 chunk kinds, sends no marker and no state_update, then responds."""
    result, _msgs, tokens = talk(tmp_path, "--turns", "3", protocol=1)
    assert result.protocol == 1
    assert replay_tokens(tokens, 1) == [
        *["h:sess_demo:user_message_chunk", "h:sess_demo:agent_message_chunk"] * 3,
        "ok:1",
    ]


def test_initialize_negotiates_the_version_and_names_the_agent(tmp_path: Path) -> None:
    """initialize answers v2 with `info` and v1 with `agentInfo`, named acp-trace-demo-agent."""
    _r, v2, _t = talk(tmp_path, resumes=0)
    _r, v1, _t = talk(tmp_path, resumes=0, protocol=1)
    assert v2[0]["result"]["protocolVersion"] == 2
    assert v2[0]["result"]["info"]["name"] == "acp-trace-demo-agent"
    assert v1[0]["result"]["protocolVersion"] == 1
    assert v1[0]["result"]["agentInfo"]["name"] == "acp-trace-demo-agent"


def test_resume_without_cursor_sends_only_the_snapshot(tmp_path: Path) -> None:
    """A v2 resume without replayFrom replays nothing: state_update, then the response."""
    _r, _m, tokens = talk(tmp_path, cursor="none")
    assert replay_tokens(tokens, 1) == ["state:sess_demo:idle", "ok:1"]


def test_unsupported_cursor_is_rejected_with_nothing_replayed(tmp_path: Path) -> None:
    """An unsupported replayFrom type gets -32602 and no update at all."""
    _r, _m, tokens = talk(tmp_path, cursor="_vendor_position")
    assert replay_tokens(tokens, 1) == ["err:1:-32602"]


def test_unknown_session_is_answered_32002(tmp_path: Path) -> None:
    """A resume or load of a session the agent does not know gets -32002 and nothing else."""
    _r, _m, v2 = talk(tmp_path, session="sess_nobody")
    _r, _m, v1 = talk(tmp_path, session="sess_nobody", protocol=1)
    assert replay_tokens(v2, 1) == ["err:1:-32002"]
    assert replay_tokens(v1, 1) == ["err:1:-32002"]


def test_new_session_prompt_and_resume_replays_the_prompt(tmp_path: Path) -> None:
    """session/new, a v2 prompt (acceptance naming the user message, its echo under that id,
    idle with stopReason), then a resume replaying it, and only it (the new session has no
    history from before), whole (the chunks add up to the message) under the same ids."""
    result, msgs, tokens = talk(tmp_path, "--turns", "1", session=None, prompts=("hi there",))
    assert [e.method for e in result.exchanges] == [
        "initialize",
        "session/new",
        "session/prompt",
        "session/resume",
    ]
    sid = msgs[1]["result"]["sessionId"]
    prompt = replay_tokens(tokens, 2)
    assert prompt[0] == "ok:2"
    ends = [m["params"]["update"] for m in msgs[2:] if token(m) == f"state:{sid}:idle"]
    assert ends[0]["stopReason"] == "end_turn"
    echoed = [
        m["params"]["update"]["content"]["text"]
        for m in msgs
        if token(m) == f"h:{sid}:agent_message_chunk"
    ]
    assert "".join(echoed) == "hi there"
    resume = replay_tokens(tokens, 3)
    assert len(history(resume[resume.index(f"state:{sid}:idle") + 1 :], sid)) == 2
    accepted = next(m for m in msgs if m.get("id") == 2)["result"]
    users = [m["params"]["update"] for m in msgs if token(m) == f"h:{sid}:user_message"]
    assert accepted == {"messageId": users[0]["messageId"]}
    assert users[0]["content"] == [{"type": "text", "text": "hi there"}]
    replayed = [u for u in users[1:] if u["messageId"] == accepted["messageId"]]
    assert [u["content"] for u in replayed] == [users[0]["content"]]  # same id in the replay


def test_v1_prompt_answers_stop_reason_after_the_echo(tmp_path: Path) -> None:
    """A v1 prompt streams the echo, then answers {stopReason: end_turn}."""
    _r, msgs, tokens = talk(tmp_path, session=None, prompts=("one two",), protocol=1, resumes=0)
    assert replay_tokens(tokens, 2)[-1] == "ok:2"
    assert msgs[-1]["result"] == {"stopReason": "end_turn"}
    assert len(replay_tokens(tokens, 2)) == 3


# ---------------------------------------------------------------- faults


def test_fault_marker_missing(tmp_path: Path) -> None:
    """marker-missing: the replay and the snapshot, with no marker before the response."""
    _r, _m, tokens = talk(tmp_path, "--fault", "marker-missing")
    window = replay_tokens(tokens, 1)
    assert "marker:sess_demo" not in tokens
    assert window[-2:] == ["state:sess_demo:idle", "ok:1"]


def test_fault_marker_late(tmp_path: Path) -> None:
    """marker-late: the marker comes right after the response."""
    _r, _m, tokens = talk(tmp_path, "--fault", "marker-late")
    assert "marker:sess_demo" not in replay_tokens(tokens, 1)
    assert tokens[tokens.index("ok:1") + 1] == "marker:sess_demo"


def test_fault_marker_duplicate(tmp_path: Path) -> None:
    """marker-duplicate: two markers in the window of one resume."""
    _r, _m, tokens = talk(tmp_path, "--fault", "marker-duplicate")
    assert replay_tokens(tokens, 1).count("marker:sess_demo") == 2


def test_fault_marker_unexpected(tmp_path: Path) -> None:
    """marker-unexpected: markers on session/new and on a resume without cursor."""
    _r, msgs, tokens = talk(tmp_path, "--fault", "marker-unexpected", session=None, cursor="none")
    sid = next(m for m in msgs if m.get("id") == 1 and "result" in m)["result"]["sessionId"]
    assert replay_tokens(tokens, 1) == [f"marker:{sid}", "ok:1"]
    assert replay_tokens(tokens, 2) == [f"marker:{sid}", f"state:{sid}:idle", "ok:2"]


def test_fault_marker_with_rejection(tmp_path: Path) -> None:
    """marker-with-rejection: the marker without the replay, then -32602."""
    _r, _m, tokens = talk(tmp_path, "--fault", "marker-with-rejection")
    assert replay_tokens(tokens, 1) == ["marker:sess_demo", "err:1:-32602"]


def test_fault_error_after_marker(tmp_path: Path) -> None:
    """error-after-marker: the replay and its marker, then -32603 and no snapshot."""
    _r, _m, tokens = talk(tmp_path, "--fault", "error-after-marker")
    assert replay_tokens(tokens, 1)[-2:] == ["marker:sess_demo", "err:1:-32603"]


def test_fault_live_before_marker(tmp_path: Path) -> None:
    """live-before-marker: an available_commands_update opens the replay."""
    _r, _m, tokens = talk(tmp_path, "--fault", "live-before-marker")
    window = replay_tokens(tokens, 1)
    assert window[0] == "l:sess_demo:available_commands_update"
    assert window.index("marker:sess_demo") > 0


def test_fault_request_before_marker(tmp_path: Path) -> None:
    """request-before-marker: a permission request mid-replay, answered, then the replay goes on."""
    result, _m, tokens = talk(tmp_path, "--fault", "request-before-marker")
    window = replay_tokens(tokens, 1)
    ask = window.index("ask:session/request_permission")
    assert 0 < ask < window.index("marker:sess_demo")
    assert result.finished


def test_fault_crash_mid_replay(tmp_path: Path) -> None:
    """crash-mid-replay: half the history, then the agent exits and the resume gets no response."""
    result, _m, tokens = talk(tmp_path, "--turns", "4", "--fault", "crash-mid-replay")
    assert not result.finished
    assert result.agent_exit == CRASH_EXIT_CODE
    assert tokens[1:] == ["h:sess_demo:user_message", "h:sess_demo:agent_message"] * 2


def test_fault_child_marker_missing(tmp_path: Path) -> None:
    """child-marker-missing: a child is announced and replayed but never marked (one child implied)."""
    _r, _m, tokens = talk(tmp_path, "--fault", "child-marker-missing")
    assert "h:sess_demo:subagent_update" in tokens
    assert history(tokens, "sess_demo-child0")
    assert "marker:sess_demo-child0" not in tokens
    assert "marker:sess_demo" in tokens


def test_fault_child_marker_before_announce(tmp_path: Path) -> None:
    """child-marker-before-announce: the child's replay and marker precede its subagent_update."""
    _r, _m, tokens = talk(tmp_path, "--children", "1", "--fault", "child-marker-before-announce")
    assert tokens.index("marker:sess_demo-child0") < tokens.index("h:sess_demo:subagent_update")


def test_fault_state_snapshot_missing(tmp_path: Path) -> None:
    """state-snapshot-missing: marker, then the response with no state_update."""
    _r, _m, tokens = talk(tmp_path, "--fault", "state-snapshot-missing")
    assert replay_tokens(tokens, 1)[-2:] == ["marker:sess_demo", "ok:1"]
    assert not any(t.startswith("state:") for t in tokens)


def test_fault_message_id_missing(tmp_path: Path) -> None:
    """message-id-missing: replayed v2 messages carry no messageId."""
    _r, msgs, _t = talk(tmp_path, "--fault", "message-id-missing")
    kinds = [m["params"]["update"] for m in msgs if token(m).startswith("h:")]
    assert kinds and all("messageId" not in u for u in kinds)


def test_fault_load_updates_after_response(tmp_path: Path) -> None:
    """load-updates-after-response: a v1 load answers after the first update, then sends the rest."""
    _r, _m, tokens = talk(
        tmp_path, "--turns", "3", "--fault", "load-updates-after-response", protocol=1
    )
    assert replay_tokens(tokens, 1) == ["h:sess_demo:user_message_chunk", "ok:1"]
    assert len(history(tokens[tokens.index("ok:1") :])) == 5


def test_fault_replay_without_cursor(tmp_path: Path) -> None:
    """replay-without-cursor: a v2 resume without cursor replays the history, no marker."""
    _r, _m, tokens = talk(tmp_path, "--fault", "replay-without-cursor", cursor="none")
    window = replay_tokens(tokens, 1)
    assert len(history(window)) == 6
    assert "marker:sess_demo" not in window


def test_fault_non_json_line_and_orphan_response(tmp_path: Path) -> None:
    """non-json-line and orphan-response: a text line and a response to no request after initialize."""
    _r, _msgs, tokens = talk(tmp_path, "--fault", "non-json-line", "--fault", "orphan-response")
    assert tokens[:3] == ["ok:0", "text", "ok:orphan-1"]


def test_every_fault_is_described_and_unknown_faults_are_refused() -> None:
    """Each fault has a description; AgentOptions refuses a name it does not know."""
    assert all(FAULTS.values())
    with pytest.raises(ValueError, match="unknown fault"):
        AgentOptions(faults=frozenset({"marker-sideways"}))


# ---------------------------------------------------------------- plans and delays


def test_replay_plan_places_children_inside_the_parent_history() -> None:
    """Children are spread over the parent's turns, each block after its announcement."""
    sessions = {s.sid: s for s in fabricate("p", 6, 2)}
    plan = replay_plan(sessions, "p", 2, frozenset())
    kinds = [(s.session, (s.update or {}).get("sessionUpdate")) for s in plan]
    announces = [i for i, k in enumerate(kinds) if k[1] == "subagent_update"]
    assert len(announces) == 2
    assert kinds[announces[0] - 1][0] == "p" and kinds[announces[0] + 1][0] == "p-child0"
    assert kinds[-1] == ("p", "replay_complete")


def test_parse_gap_accepts_fixed_and_seeded_distributions() -> None:
    """A fixed gap is constant; distributions drawn with the same seed repeat."""
    assert parse_gap("0.5")(random.Random(1)) == 0.5
    for spec in ("lognormal:0.7,0.5", "uniform:1,2", "exponential:0.3"):
        draw = parse_gap(spec)
        first = [draw(random.Random(7)) for _ in range(3)]
        assert first == [draw(random.Random(7)) for _ in range(3)]
        assert all(x >= 0 for x in first)


@pytest.mark.parametrize("spec", ["-1", "nan", "gamma:1,2", "lognormal:1", "soon"])
def test_parse_gap_refuses_bad_specs(spec: str) -> None:
    """Negative, non-finite, unknown or malformed gap specs raise ValueError."""
    with pytest.raises(ValueError):
        parse_gap(spec)


def test_a_request_line_over_64_kib_is_read_whole(tmp_path: Path) -> None:
    """A 200 kB prompt line (past asyncio's 64 KiB default) is read and echoed whole."""
    text = "x" * 200_000
    _r, msgs, _t = talk(tmp_path, session=None, prompts=(text,), protocol=1, resumes=0)
    echoed = [m["params"]["update"]["content"]["text"] for m in msgs if "params" in m]
    assert "".join(echoed).strip() == text
    assert msgs[-1]["result"] == {"stopReason": "end_turn"}


def test_cancel_request_stops_the_replay_with_32800_and_no_marker() -> None:
    """`$/cancel_request` during a paced replay ends it with -32800 and no marker."""
    cmd = [sys.executable, "-m", "acp_trace", "demo-agent", "--turns", "500", "--pace", "0.01"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    resume = {"sessionId": SID, "cwd": "/x", "replayFrom": {"type": "start"}}
    for msg in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": resume},
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}},
    ):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.close()
    tokens = [token(json.loads(line)) for line in proc.stdout]
    proc.stdout.close()
    assert proc.wait() == 0
    assert tokens[-1] == "err:1:-32800"
    assert "marker:sess_demo" not in tokens
    assert len(history(tokens)) < 1000
