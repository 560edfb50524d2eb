"""`acp-trace drive`: demo-client's recordings played against demo-agent behind the tap."""

from __future__ import annotations

from pathlib import Path

import orjson

from clirun import Cli
from drivelib import demo_agent


def _client_messages(trace: Path) -> list[dict[str, object]]:
    out = []
    for line in trace.read_bytes().splitlines()[1:]:
        rec = orjson.loads(line)
        if rec.get("src") == "client" and "msg" in rec:
            out.append(rec["msg"])
    return out


def test_the_same_agent_gives_no_regression(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """Driving the agent the recording was made with: every request in order through the tap,
    the new session id from session/new used, no regression, exit 0."""
    new = tmp_path / "new.jsonl"
    agent = demo_agent("--turns", "5", "--children", "1")
    done = cli("drive", "--speed", "0", "-o", str(new), str(recordings["v2"]), "--", *agent)
    assert done.code == 0, done.out + done.err
    assert "No regression against the recording." in done.out
    sent = _client_messages(new)
    assert [m["method"] for m in sent] == [
        "initialize", "session/new", "session/prompt", "session/resume", "session/resume",
    ]  # fmt: skip
    assert [m["id"] for m in sent] == [0, 1, 2, 3, 4]
    assert all(m["params"]["sessionId"] == "sess_new_1" for m in sent[2:])
    assert "complete" in done.out


def test_a_fault_on_the_agent_side_is_reported(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """An agent that drops the marker: each resume's outcome flips, the new error rule is
    named, and the exit code is 1."""
    new = tmp_path / "new.jsonl"
    agent = demo_agent("--turns", "5", "--children", "1", "--fault", "marker-missing")
    done = cli("drive", "--speed", "0", "-o", str(new), str(recordings["v2"]), "--", *agent)
    assert done.code == 1, done.out + done.err
    assert "request 4 session/resume on sess_new_1: replay complete -> unmarked" in done.out
    assert "request 5 session/resume on sess_new_1: replay complete -> unmarked" in done.out
    assert "rule marker-missing (error): 2 in this run, none recorded" in done.out


def test_agent_requests_get_the_recorded_answer(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """The permission request is answered with the recorded choice; one the recording lacks
    gets a JSON-RPC error naming it, and the run says so."""
    asking = demo_agent("--turns", "5", "--fault", "request-before-marker")
    new = tmp_path / "answered.jsonl"
    done = cli("drive", "--speed", "0", "-o", str(new), str(recordings["asks"]), "--", *asking)
    assert "session/request_permission: 1 / 1" in done.out
    answers = [m for m in _client_messages(new) if "result" in m or "error" in m]
    assert answers and answers[0]["result"]["outcome"]["outcome"] == "selected"  # type: ignore[index]
    new = tmp_path / "unanswerable.jsonl"
    done = cli("drive", "--speed", "0", "-o", str(new), str(recordings["v2"]), "--",
               *demo_agent("--turns", "5", "--children", "1", "--fault", "request-before-marker"))  # fmt: skip
    assert "session/request_permission: 2 / 0" in done.out
    assert (
        "unanswerable: the recording has no answer for session/request_permission number 1"
        in done.out
    )
    errors = [m for m in _client_messages(new) if "error" in m]
    assert len(errors) == 2
    assert "no answer for session/request_permission" in errors[0]["error"]["message"]  # type: ignore[index]


def test_an_unknown_session_says_how_to_give_one(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """A v1 load of a stored session the agent lacks: -32002, a regression, and a note on how
    to give the agent a session; with --session the stored one is loaded."""
    new = tmp_path / "new.jsonl"
    done = cli("drive", "--speed", "0", "-o", str(new), str(recordings["v1"]), "--",
               *demo_agent("--turns", "5"))  # fmt: skip
    assert done.code == 1
    assert "answered -32002 (unknown session)" in done.out
    assert "--session sess_stored=STORED_ID" in done.out
    assert "ok -> error -32002" in done.out
    mapped = cli("drive", "--speed", "0", "-o", str(tmp_path / "mapped.jsonl"),
                 "--session", "sess_stored=sess_other", str(recordings["v1"]), "--",
                 *demo_agent("--turns", "5", "--session", "sess_other"))  # fmt: skip
    assert mapped.code == 0, mapped.out
    loads = [
        m for m in _client_messages(tmp_path / "mapped.jsonl") if m.get("method") == "session/load"
    ]
    assert loads[0]["params"]["sessionId"] == "sess_other"  # type: ignore[index]


def test_options_are_checked_before_anything_runs(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """A bad --session, no agent, or -o naming the recording: one line, exit 2, no trace."""
    bad = cli("drive", "--session", "nope", str(recordings["v1"]), "--", "true")
    assert bad.code == 2 and "--session nope: expected RECORDED=LIVE" in bad.err
    same = cli("drive", "-o", str(recordings["v1"]), str(recordings["v1"]), "--", "true")
    assert same.code == 2 and "that is the recording" in same.err
    missing = cli("drive", str(tmp_path / "none.jsonl"), "--", "true")
    assert missing.code == 2 and "none.jsonl" in missing.err


def test_protocol_overrides_the_recorded_version(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """--protocol 1 on a v2 recording: initialize says 1, the v1 prompt is not waited on for
    an idle state_update, and the replays that vanish are regressions."""
    new = tmp_path / "v1.jsonl"
    agent = demo_agent("--turns", "5", "--children", "1")
    done = cli("drive", "--speed", "0", "--protocol", "1", "-o", str(new), str(recordings["v2"]),
               "--", *agent)  # fmt: skip
    assert done.code == 1, done.out + done.err
    sent = _client_messages(new)
    assert sent[0]["params"]["protocolVersion"] == 1  # type: ignore[index]
    assert len(sent) == 5
    assert (
        "request 4 session/resume on sess_new_1: replay complete in the recording, "
        "no replay in this run" in done.out.replace("\n  ", " ")
    )
