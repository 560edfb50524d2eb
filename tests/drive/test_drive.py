"""`acp-trace drive`: demo-client's recordings played against demo-agent behind the tap."""

from __future__ import annotations

import stat
from pathlib import Path

import orjson
import pytest

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
    """A bad --session, a missing recording, or -o naming the recording, a file that is not a
    trace or a symbolic link: one line, exit 2, nothing written."""
    bad = cli("drive", "--session", "nope", str(recordings["v1"]), "--", "true")
    assert bad.code == 2 and "--session nope: expected RECORDED=LIVE" in bad.err
    same = cli("drive", "-o", str(recordings["v1"]), str(recordings["v1"]), "--", "true")
    assert same.code == 2 and "that is the recording" in same.err
    missing = cli("drive", str(tmp_path / "none.jsonl"), "--", "true")
    assert missing.code == 2 and "none.jsonl" in missing.err
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    kept = cli("drive", "-o", str(notes), str(recordings["v1"]), "--", "true")
    assert kept.code == 2 and "found a file that is not one" in kept.err
    assert notes.read_text() == "mine\n"
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    link = cli("drive", "-o", str(tmp_path / "link.jsonl"), str(recordings["v1"]), "--", "true")
    assert link.code == 2 and "found a symbolic link" in link.err
    assert not (tmp_path / "elsewhere.jsonl").exists()


def _nothing_made(tmp_path: Path) -> bool:
    """No trace folder under the empty HOME or XDG_STATE_HOME, and the agent never ran."""
    made = [*(tmp_path / "home").iterdir(), *(tmp_path / "state").iterdir()]
    return not made and not (tmp_path / "started").exists()


def test_usage_errors_come_first_then_the_input_then_the_output(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """Where no trace folder exists yet: a missing TRACE, a missing `--` or agent, an argument
    between TRACE and `--` and a bad value are usage errors, named as such even when the
    recording is missing too; then a missing recording; then the output. One line each,
    exit 2, no folder made and the agent never started."""
    agent = ["--", "sh", "-c", f"touch {tmp_path / 'started'}"]
    rec, gone = str(recordings["v2"]), str(tmp_path / "none.jsonl")
    cases = [
        (("drive", *agent), "Missing argument 'TRACE'"),
        (("drive", gone), "expected `--` and the agent's command after TRACE"),
        (("drive", gone, "--"), "expected the agent's command after `--`, found nothing"),
        (("drive", gone, "my-agent", "--", "x"), "'my-agent': expected one TRACE before `--`"),
        (("drive", gone, "--session", "nope", *agent), "--session nope: expected RECORDED=LIVE"),
        (("drive", gone, "--timeout", "inf", *agent), "--timeout inf: expected seconds"),
        (("drive", gone, *agent), "none.jsonl: cannot read the recording"),
        (("drive", rec, "-o", str(tmp_path / "no" / "new.jsonl"), *agent), "no/new.jsonl"),
    ]
    for args, said in cases:
        done = cli(*args)
        assert done.code == 2, (args, done.out, done.err)
        assert said in done.err and done.err.count("\n") == 1, (args, done.err)
        assert _nothing_made(tmp_path), args


def test_non_finite_or_absurd_waits_are_refused(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """--timeout inf (which used to die at the end of a v2 turn with an OverflowError), nan,
    0, past a day, and --grace inf or negative: one line naming the value, exit 2, before the
    agent starts."""
    agent = ["--", "sh", "-c", f"touch {tmp_path / 'started'}"]
    for option, value in [("--timeout", "inf"), ("--timeout", "1e300"), ("--timeout", "86401"),
                          ("--grace", "inf"), ("--grace", "-1"), ("--timeout", "nan")]:  # fmt: skip
        done = cli("drive", option, value, str(recordings["v2"]), *agent)
        assert done.code == 2, (option, value, done.err)
        assert done.err.startswith("acp-trace: ") and done.err.count("\n") == 1, done.err
        assert option in done.err and "Traceback" not in done.err
        assert _nothing_made(tmp_path), (option, value)


def test_without_o_the_trace_goes_into_the_tap_folder_made_as_record_makes_it(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No -o, no --dir, no ~/.local/state yet: the folders are made 0700 (as `record` makes
    them: $XDG_STATE_HOME/acp-trace/traces, else ~/.local/state/acp-trace/traces), the trace
    is a new 0600 file there, and options typed after TRACE are drive's, not the agent's."""
    agent = demo_agent("--turns", "5", "--children", "1")
    monkeypatch.delenv("XDG_STATE_HOME")
    done = cli("drive", str(recordings["v2"]), "--speed", "0", "--", *agent)
    assert done.code == 0, done.out + done.err
    folder = tmp_path / "home" / ".local" / "state" / "acp-trace" / "traces"
    made = [folder, *folder.parents][:4]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o700] * 4
    (trace,) = folder.iterdir()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600 and str(trace) in done.out
    assert "--speed" not in trace.read_text().splitlines()[0]  # the header's agent command
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    again = cli("drive", str(recordings["v2"]), "--speed", "0", "--", *agent)
    assert again.code == 0, again.out + again.err
    (other,) = (tmp_path / "state" / "acp-trace" / "traces").iterdir()
    assert stat.S_IMODE(other.parent.stat().st_mode) == 0o700


def test_options_after_the_trace_are_drives(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """`drive REC -o NEW --speed 0 -- AGENT`, the order most people type: -o and --speed are
    drive's options, and the agent gets only what follows `--`."""
    new = tmp_path / "new.jsonl"
    agent = demo_agent("--turns", "5", "--children", "1")
    done = cli("drive", str(recordings["v2"]), "-o", str(new), "--speed", "0", "--", *agent)
    assert done.code == 0, done.out + done.err
    header = orjson.loads(new.read_bytes().splitlines()[0])
    assert header["command"] == agent


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
