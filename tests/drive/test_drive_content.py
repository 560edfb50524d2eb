"""drive judges what each replay carried against the recorded one (issue 41): history lost,
messages missing or renamed, a replay that became empty, a lower protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp_trace
from acp_trace.drive.content import content_regressions, pairs
from clirun import Cli
from drivelib import demo_agent, record
from tracebuilder import TraceBuilder

S = "sess_stored"


def test_an_agent_holding_a_tenth_of_the_history_regresses(cli: Cli, tmp_path: Path) -> None:
    """A v1 load recorded with 50 turns, driven against the same agent holding 5: the history
    shrank and 90 messages are missing, each named in a line, exit 1; against the same agent
    holding all of it, no regression."""
    agent = ("--session", S)
    recording = record(tmp_path / "rec.jsonl", demo_agent("--turns", "50", *agent), protocol=1,
                       session=S)  # fmt: skip
    cut = cli("drive", "--speed", "0", "-o", str(tmp_path / "cut.jsonl"), str(recording), "--",
              *demo_agent("--turns", "5", *agent))  # fmt: skip
    out = cut.out.replace("\n  ", " ")
    assert cut.code == 1, cut.out + cut.err
    assert "history 100 -> 10 messages (-90%)" in out
    assert "90 of the recording's 100 messages missing (the first: user_message" in out
    same = cli("drive", "--speed", "0", "-o", str(tmp_path / "same.jsonl"), str(recording), "--",
               *demo_agent("--turns", "50", *agent))  # fmt: skip
    assert same.code == 0, same.out + same.err
    assert "No regression against the recording." in same.out


def test_history_drop_sets_how_much_less_is_a_regression(cli: Cli, tmp_path: Path) -> None:
    """--history-drop 95 lets 90% less history pass as a drop, not the missing messages."""
    recording = record(tmp_path / "rec.jsonl", demo_agent("--turns", "50", "--session", S),
                       protocol=1, session=S)  # fmt: skip
    done = cli("drive", "--speed", "0", "--history-drop", "95", "-o", str(tmp_path / "n.jsonl"),
               str(recording), "--", *demo_agent("--turns", "5", "--session", S))  # fmt: skip
    assert done.code == 1
    assert "messages missing" in done.out and "--history-drop" not in done.out


def _judge(tmp_path: Path, before: TraceBuilder, after: TraceBuilder) -> list[str]:
    a = acp_trace.analyze(before.write(tmp_path / "a.jsonl"))
    b = acp_trace.analyze(after.write(tmp_path / "b.jsonl"))
    first = a.timeline["trace"][0]
    matched = pairs(a, b, first, {}, {})
    return content_regressions(a, b, matched, {}, 10.0)


def _replay(b: TraceBuilder, messages: list[tuple[str, str, str]], *, v1: bool = False) -> None:
    rid = b.load(S) if v1 else b.resume(S)
    for kind, ident, text in messages:
        fields: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if not v1:
            fields["messageId"] = ident
        b.update(S, kind, **fields)
    if not v1:
        b.marker(S)
    b.response(rid, {})


HISTORY = [("user_message", f"u{i}", f"q{i}") for i in range(5)]


def test_renamed_messages_are_a_regression(tmp_path: Path) -> None:
    """The same messages under new ids: one line with the count and the first renaming."""
    before, after = TraceBuilder(), TraceBuilder()
    _replay(before, HISTORY)
    _replay(after, [(k, i + "-new", t) for k, i, t in HISTORY])
    [line] = _judge(tmp_path, before, after)
    assert "a replay session/resume on sess_stored: 5 messages replayed under other ids" in line
    assert '"u0" -> "u0-new"' in line


def test_an_unmarked_replay_that_became_empty_is_a_regression(tmp_path: Path) -> None:
    """Unmarked replays are judged like the others: one that carried nothing is named."""
    before, after = TraceBuilder(), TraceBuilder()
    rid = before.resume(S)
    before.update(S, "user_message", messageId="u0", content=[{"type": "text", "text": "q"}])
    before.response(rid, {})
    rid = after.resume(S)
    after.response(rid, {})
    assert _judge(tmp_path, before, after) == [
        "a replay session/resume on sess_stored: the replay became empty (the recording "
        "replayed 1 message)"
    ]


def test_a_lower_protocol_is_a_regression(tmp_path: Path) -> None:
    """The agent answered protocol 1 where the recording negotiated 2."""
    before, after = TraceBuilder(protocol=2), TraceBuilder(protocol=1)
    assert _judge(tmp_path, before, after) == [
        "the agent answered protocol 1; the recording negotiated protocol 2"
    ]


def test_the_same_content_is_no_regression(tmp_path: Path) -> None:
    """Replays that carry the same messages, v1 or v2, give no line."""
    for v1 in (False, True):
        before, after = TraceBuilder(protocol=1 if v1 else 2), TraceBuilder(protocol=1 if v1 else 2)
        _replay(before, HISTORY, v1=v1)
        _replay(after, HISTORY, v1=v1)
        assert _judge(tmp_path, before, after) == []


# An agent that answers initialize, then every request with an error whose reason is in `data`
# (as codex-acp and gemini-cli put it).
DATA_AGENT = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    elif "id" in msg and "method" in msg:
        error = {"code": -32603, "message": "Internal error",
                 "data": {"reason": "session file is corrupt"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}) + "\\n")
    sys.stdout.flush()
"""


def test_an_error_answer_shows_its_data(cli: Cli, tmp_path: Path) -> None:
    """An agent's error answer is named with its message and its data, where the reason is."""
    import sys

    recording = record(tmp_path / "rec.jsonl", demo_agent("--turns", "2", "--session", S),
                       protocol=1, session=S)  # fmt: skip
    script = tmp_path / "agent.py"
    script.write_text(DATA_AGENT)
    done = cli("drive", "--speed", "0", "-o", str(tmp_path / "n.jsonl"), str(recording), "--",
               sys.executable, str(script))  # fmt: skip
    out = done.out.replace("\n  ", " ")
    assert done.code == 1, done.out + done.err
    assert (
        'ok in the recording, error -32603 in this run: Internal error (data: {"reason":'
        '"session file is corrupt"})' in out
    )


def test_the_plugins_error_names_its_data() -> None:
    """The plugin's AcpError says the message and the data."""
    from acp_trace.pytest_plugin.client import AcpError

    error = AcpError(-32603, "Internal error", {"reason": "x" * 500}, "session/load")
    text = str(error)
    assert text.startswith('session/load answered error -32603: Internal error (data: {"reason"')
    assert text.endswith("…)") and len(text) < 300


def test_a_load_that_answers_before_its_history_is_judged_on_what_came_after(
    tmp_path: Path,
) -> None:
    """gemini-cli answers a v1 load first and sends the history after: drive judges what the
    client got for the load, up to its next request for the session."""

    def load(b: TraceBuilder, turns: int) -> None:
        rid = b.load(S)
        b.update(S, "user_message_chunk", content={"type": "text", "text": "q"})
        b.response(rid, {})
        for i in range(turns):
            b.update(S, "agent_message_chunk", content={"type": "text", "text": f"a{i}"})
            b.update(S, "user_message_chunk", content={"type": "text", "text": f"q{i}"})
        b.request("session/prompt", {"sessionId": S, "prompt": []})

    before, after = TraceBuilder(protocol=1), TraceBuilder(protocol=1)
    load(before, 10)
    load(after, 1)
    lines = _judge(tmp_path, before, after)
    assert any("history 21 -> 3 messages" in line for line in lines), lines
    assert any("18 of the recording's 21 messages missing" in line for line in lines), lines
