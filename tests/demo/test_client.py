"""The demo client: the requests it sends, how it answers agents, byte-exact saving, ending agents."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from acp_trace.demo.client import ClientOptions, run_client

# A scripted agent: copies all it writes to argv[1], the client's answers to argv[2];
# argv[3] == "hang" makes it ignore stdin EOF and leave a grandchild (pid in argv[2] + ".pid").
FAKE_AGENT = r"""
import json, os, subprocess, sys, time
out, copy, answers = sys.stdout.buffer, open(sys.argv[1], "wb"), open(sys.argv[2], "w")
def w(data):
    out.write(data); out.flush(); copy.write(data); copy.flush()
def reply(mid, result, eol=b"\n"):
    w(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode() + eol)
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "method" not in msg:
        answers.write(json.dumps(msg) + "\n"); answers.flush(); continue
    method, mid = msg["method"], msg["id"]
    if method == "initialize":
        reply(mid, {"protocolVersion": msg["params"]["protocolVersion"]}, b"\r\n")
        w(b"\n")
        big = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 100000}}
        w(json.dumps({"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": "s1", "update": big}}).encode() + b"\n")
        w(json.dumps({"jsonrpc": "2.0", "id": "fs-1", "method": "fs/read_text_file",
                      "params": {"sessionId": "s1", "path": "/etc/hostname"}}).encode() + b"\n")
        opts = [{"optionId": "no", "name": "No", "kind": "reject_once"},
                {"optionId": "yes", "name": "Yes", "kind": "allow_always"}]
        w(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                      "params": {"sessionId": "s1", "toolCall": {"toolCallId": "t"},
                                 "options": opts}}).encode() + b"\n")
    elif method == "session/new":
        reply(mid, {"sessionId": "s1"})
    else:
        reply(mid, {})
if sys.argv[3] == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[2] + ".pid", "w").write(str(child.pid))
    time.sleep(600)
"""


def fake(tmp_path: Path, mode: str = "exit", **kw: Any) -> tuple[Any, Path]:
    """Run the client against the fake agent; returns the result and the work folder."""
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    cmd = (sys.executable, str(script), str(tmp_path / "wrote.bin"), str(tmp_path / "answers"))
    opts = ClientOptions(
        command=(*cmd, mode),
        cwd="/home/user/project",
        timeout=30,
        grace=kw.pop("grace", 5.0),
        save=tmp_path / "received.bin",
        save_sent=tmp_path / "sent.bin",
        **kw,
    )
    return run_client(opts), tmp_path


def sent(folder: Path) -> list[dict[str, Any]]:
    """The client's messages as saved."""
    return [json.loads(line) for line in (folder / "sent.bin").read_bytes().splitlines()]


def answers(folder: Path) -> dict[Any, dict[str, Any]]:
    """The client's responses to agent requests, by id, as the agent read them."""
    lines = (folder / "answers").read_text().splitlines()
    return {m["id"]: m for m in map(json.loads, lines)}


def test_received_bytes_are_saved_exactly(tmp_path: Path) -> None:
    """The save file equals what the agent wrote: CRLF, blank lines and a 100 kB line included."""
    result, folder = fake(tmp_path)
    assert result.finished
    wrote = (folder / "wrote.bin").read_bytes()
    assert b"\r\n" in wrote and len(wrote) > 100_000
    assert (folder / "received.bin").read_bytes() == wrote


def test_permission_is_allowed_and_other_agent_requests_get_32601(tmp_path: Path) -> None:
    """session/request_permission gets the first allowing option; fs/* gets method-not-found."""
    _result, folder = fake(tmp_path)
    got = answers(folder)
    assert got[7]["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert got["fs-1"]["error"]["code"] == -32601


def test_v2_run_sends_initialize_new_session_and_replaying_resumes(tmp_path: Path) -> None:
    """v2: initialize with `info`, session/new, then N session/resume with replayFrom start."""
    result, folder = fake(tmp_path, resumes=3)
    requests = [m for m in sent(folder) if "method" in m]
    assert [m["method"] for m in requests] == ["initialize", "session/new"] + ["session/resume"] * 3
    assert requests[0]["params"]["protocolVersion"] == 2
    assert requests[0]["params"]["info"]["name"] == "acp-trace-demo-client"
    assert all(m["params"]["replayFrom"] == {"type": "start"} for m in requests[2:])
    assert all(m["params"]["sessionId"] == "s1" for m in requests[2:])
    assert result.protocol == 2


def test_v1_run_loads_with_client_info(tmp_path: Path) -> None:
    """v1: initialize with `clientInfo`, then session/load with mcpServers."""
    _result, folder = fake(tmp_path, protocol=1, resumes=2)
    requests = [m for m in sent(folder) if "method" in m]
    assert "clientInfo" in requests[0]["params"]
    assert [m["method"] for m in requests[2:]] == ["session/load"] * 2
    assert requests[2]["params"]["mcpServers"] == []


def test_given_session_skips_new_and_cursor_none_omits_replay_from(tmp_path: Path) -> None:
    """--session resumes that session directly; --cursor none sends no replayFrom."""
    _result, folder = fake(tmp_path, session="s9", cursor="none")
    requests = [m for m in sent(folder) if "method" in m]
    assert [m["method"] for m in requests] == ["initialize", "session/resume"]
    assert requests[1]["params"] == {"sessionId": "s9", "cwd": "/home/user/project"}


def _ends(pid: int, within: float) -> bool:
    """True once `pid` is gone or a zombie; the signal may still be in flight on a busy machine."""
    status = Path(f"/proc/{pid}/status")
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if "State:\tZ" in status.read_text():
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_an_agent_that_ignores_eof_is_ended_with_its_process_group(tmp_path: Path) -> None:
    """After the grace period the agent and its grandchild are ended by process group."""
    result, folder = fake(tmp_path, "hang", grace=0.5)
    assert result.finished
    assert result.agent_exit is not None and result.agent_exit < 0
    grandchild = int((folder / "answers.pid").read_text())
    assert _ends(grandchild, within=10.0)


def test_cli_prints_nothing_and_exits_0_against_the_demo_agent(tmp_path: Path) -> None:
    """`acp-trace demo-client -- acp-trace demo-agent` exits 0 with an empty stdout."""
    agent = [sys.executable, "-m", "acp_trace", "demo-agent"]
    cmd = [sys.executable, "-m", "acp_trace", "demo-client", "--resumes", "2", "--", *agent]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, b"")
    summary = subprocess.run(
        [*cmd[:4], "--summary", *cmd[4:]], capture_output=True, timeout=60, check=False
    )
    assert b"session/resume sess_new_1: ok" in summary.stdout


def test_cli_exits_1_and_says_why_when_the_agent_dies(tmp_path: Path) -> None:
    """A connection that ends before the last response gives exit 1 and a message on stderr."""
    agent = [sys.executable, "-m", "acp_trace", "demo-agent", "--fault", "crash-mid-replay"]
    cmd = [sys.executable, "-m", "acp_trace", "demo-client", "--", *agent]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode == 1
    assert b"acp-trace: demo-client: the connection ended before the response" in done.stderr


def test_prompts_on_a_session_from_before_come_after_a_resume_without_replay(
    tmp_path: Path,
) -> None:
    """--session with prompts: the session is opened by a resume without replayFrom, the
    prompts follow in order, then the replaying resumes."""
    result, folder = fake(tmp_path, session="old", prompts=("one", "two"), protocol=1)
    assert result.finished
    requests = [m for m in sent(folder) if "method" in m]
    assert [m["method"] for m in requests] == [
        "initialize",
        "session/load",  # v1, and the fake agent offers no session/resume: a load opens it
        "session/prompt",
        "session/prompt",
        "session/load",
    ]
    assert [m["params"]["prompt"][0]["text"] for m in requests[2:4]] == ["one", "two"]


def test_cli_prompt_repeats_and_new_sessions_take_the_prefix(tmp_path: Path) -> None:
    """`--prompt A --prompt B` sends both turns before the replay; the agent's
    --new-session-prefix names the session session/new makes."""
    agent = [sys.executable, "-m", "acp_trace", "demo-agent", "--new-session-prefix", "mine_"]
    cmd = [sys.executable, "-m", "acp_trace", "demo-client", "--summary"]
    cmd += ["--prompt", "first", "--prompt", "second", "--", *agent]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = [line.split(":")[0] for line in done.stdout.decode().splitlines()[1:]]
    assert lines == [
        "initialize",
        "session/new",
        "session/prompt mine_1",
        "session/prompt mine_1",
        "session/resume mine_1",
    ]
