"""Golden-file tests of the CLI output (set UPDATE_GOLDEN=1 to rewrite the files)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acp_trace.cli import main
from clirun import as_terminal
from testpaths import GOLDEN
from tracebuilder import TraceBuilder


def sample_trace() -> TraceBuilder:
    """A v2 session with a complete replay (child included), a late marker, a prompt and noise."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    rid = b.resume("sess_1", dt=2)
    b.history("sess_1", 2, dt=3)
    b.update("sess_1", "subagent_update", sessionId="child_1")
    b.history("child_1", 1)
    b.marker("child_1")
    b.marker("sess_1", dt=2)
    b.update("sess_1", "available_commands_update", availableCommands=[])
    b.state("sess_1")
    b.response(rid, {}, dt=450)
    r2 = b.resume("sess_2")
    b.history("sess_2", 1, message_ids=False)
    b.state("sess_2")
    b.response(r2, {}, dt=120)
    b.marker("sess_2")
    b.text("stderr", "agent: cold start took 0.4 s")
    p = b.request("session/prompt", {"sessionId": "sess_1", "prompt": []})
    b.response(p, {})
    b.update("sess_1", "agent_message_chunk", dt=30, messageId="m9")
    b.state("sess_1", stopReason="end_turn", dt=20)
    b.text("agent", "debug: oops")
    b.event("eof", stream="client")
    b.event("exit", code=0, signal=None)
    return b


def run(
    args: list[str],
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    width: int = 80,
) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    as_terminal(monkeypatch, width)
    monkeypatch.setattr(sys, "argv", ["acp-trace", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().out


CASES = {
    "summary": (["summary", "t.jsonl"], 0),
    "timeline": (["timeline", "t.jsonl"], 0),
    "timeline-replays-only": (["timeline", "t.jsonl", "--replays-only"], 0),
    "timeline-session": (["timeline", "t.jsonl", "--session", "sess_2"], 0),
    "replays": (["replays", "t.jsonl"], 0),
    "replays-wide": (["replays", "t.jsonl", "--wide"], 0),
    "replays-columns": (
        ["replays", "t.jsonl", "--columns", "session,parent_session,outcome,marker_ms,gap_ms"],
        0,
    ),
    "replays-json": (["replays", "t.jsonl", "--format", "json"], 0),
    "replays-csv": (["replays", "t.jsonl", "--format", "csv"], 0),
    "latency": (["latency", "t.jsonl"], 0),
    "latency-json": (["latency", "t.jsonl", "--by", "agent", "--format", "json"], 0),
    "check": (["check", "t.jsonl"], 1),
    "check-json": (["check", "t.jsonl", "--format", "json"], 1),
    "check-junit": (["check", "t.jsonl", "--format", "junit"], 1),
    "check-warnings": (
        [
            "check",
            "t.jsonl",
            "--rule",
            "non-json-line",
            "--rule",
            "unanswered-request",
            "--min-severity",
            "warning",
        ],
        1,
    ),
    "rules": (["rules"], 0),
}
# Outputs fitted to the terminal have a golden file per width; the others are the same at both.
BY_WIDTH = {"replays", "replays-columns", "latency", "summary", "check", "check-warnings"}


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(
    name: str,
    width: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each command prints exactly its golden file at 80 and 200 columns, with its exit code."""
    sample_trace().write(tmp_path / "t.jsonl")
    args, expected_code = CASES[name]
    code, out = run(args, tmp_path, monkeypatch, capsys, width)
    golden = GOLDEN / (f"{name}@{width}.txt" if name in BY_WIDTH else f"{name}.txt")
    if os.environ.get("UPDATE_GOLDEN") and (name in BY_WIDTH or width == 80):
        golden.write_text(out)
    assert code == expected_code
    assert out == golden.read_text()
    if name in BY_WIDTH and name != "replays-wide":
        assert max(len(line) for line in out.splitlines()) <= width


def stderr_trace() -> TraceBuilder:
    """Two resumes with the agent's stderr before, inside and after their windows: phases in
    claude-agent-acp's and the generic form, a line with an escape sequence, a plain one."""
    b = TraceBuilder(agent="claude-agent-acp", version="0.101.0")
    b.text("stderr", "[boot] phase=start durationMs=40")
    rid = b.resume("sess_a", dt=2)
    b.text("stderr", "[session/create] sessionId=sess_a phase=validate-cwd durationMs=0")
    b.history("sess_a", 2)
    b.text("stderr", "[session/create] sessionId=sess_a phase=sdk-initialize durationMs=1327", 1300)
    b.text("stderr", "[authStatus] no identity \x1b[31msignal")
    b.state("sess_a")
    b.response(rid, {}, dt=20)
    r2 = b.resume("sess_b")
    b.text("stderr", "worker ready load_ms=12.5 rows=4")
    b.history("sess_b", 1)
    b.marker("sess_b")
    b.state("sess_b")
    b.response(r2, {}, dt=5)
    b.text("stderr", "[after] phase=late durationMs=3")
    return b


STDERR_CASES = {
    "timeline-stderr": ["timeline", "t.jsonl"],
    "timeline-stderr-replays-only": ["timeline", "t.jsonl", "--replays-only"],
    "timeline-stderr-session": ["timeline", "t.jsonl", "--session", "sess_a"],
}


@pytest.mark.parametrize("name", sorted(STDERR_CASES))
def test_golden_timeline_with_stderr(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The timeline marks each stderr line that names a phase with it (escaped), and
    `--session` keeps the stderr lines inside that session's replay windows, no others."""
    stderr_trace().write(tmp_path / "t.jsonl")
    code, out = run(STDERR_CASES[name], tmp_path, monkeypatch, capsys)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(out)
    assert code == 0
    assert out == golden.read_text()


def test_check_exit_zero_without_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """check exits 0 when no finding has severity error (--no-schema: the trace is short-hand)."""
    b = TraceBuilder()
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.write(tmp_path / "t.jsonl")
    code, out = run(["check", "t.jsonl", "--no-schema"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "0 errors, 1 warning, 0 info" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "missing.jsonl"], "acp-trace: missing.jsonl: no such file or directory"),
        (["check", "t.jsonl", "--rule", "no-such-rule"], "acp-trace: unknown rule id no-such-rule"),
        (
            ["check", "t.jsonl", "--format", "yaml"],
            "acp-trace: check: Invalid value for '--format' / '-f': 'yaml' is not one of "
            "'text', 'json', 'junit'; see `acp-trace check --help`\n",
        ),
        (
            ["latency", "t.jsonl", "--by", "color"],
            "acp-trace: latency: Invalid value for '--by': 'color' is not one of "
            "'method', 'agent', 'trace'; see `acp-trace latency --help`\n",
        ),
        (
            ["check", "t.jsonl", "--min-severity", "fatal"],
            "acp-trace: check: Invalid value for '--min-severity': 'fatal' is not one of "
            "'error', 'warning', 'info'; see `acp-trace check --help`\n",
        ),
        (
            ["demo-client", "--resumes", "-1", "--", "true"],
            "acp-trace: demo-client: Invalid value for '--resumes': Input should be greater "
            "than or equal to 0, got '-1'; see `acp-trace demo-client --help`\n",
        ),
        (
            ["demo-client", "--protocol", "3", "--", "true"],
            "acp-trace: demo-client: Invalid value for '--protocol': Input should be less "
            "than or equal to 2, got '3'; see `acp-trace demo-client --help`\n",
        ),
        (
            ["demo-agent", "--gap", "banana"],
            "acp-trace: demo-agent: Invalid value for '--gap': 'banana': expected SECONDS "
            "(0.5), uniform:A,B, lognormal:MU,SIGMA (lognormal:0.7,0.5) or exponential:MEAN; "
            "see `acp-trace demo-agent --help`\n",
        ),
        (
            ["summary", "t.jsonl", "--from", "yaml"],
            "acp-trace: summary: Invalid value for '--from': 'yaml' is not one of 'acp-trace', "
            "'jsonrpc', 'zed', 'conductor', 'inspector', 'thinkwell', 'acpx', 'vibe', 'acp-devtools'; see `acp-trace summary --help`\n",
        ),
        (
            ["replays"],
            "acp-trace: replays: Missing argument 'TRACE...'; see `acp-trace replays --help`",
        ),
        (["nosuch"], "acp-trace: No such command 'nosuch'; see `acp-trace --help`\n"),
        (["summary", "garbage.txt"], "acp-trace: garbage.txt:"),
    ],
)
def test_errors_exit_2_with_a_message(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    needle: str,
) -> None:
    """Unreadable inputs and bad arguments print one line `acp-trace: ...` and exit 2."""
    TraceBuilder().write(tmp_path / "t.jsonl")
    (tmp_path / "garbage.txt").write_text("hello\nworld\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["acp-trace", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--version prints the name and version and exits 0."""
    code, out = run(["--version"], tmp_path, monkeypatch, capsys)
    assert code == 0 and out.startswith("acp-trace ")


@pytest.mark.parametrize("fmt", ["text", "json", "junit"])
def test_check_on_an_empty_directory_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """A CI gate on a folder with no trace exits 2 with one line, never 0 on nothing."""
    (tmp_path / "traces").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["acp-trace", "check", "traces", "--format", fmt])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert captured.err == (
        "acp-trace: traces: no trace files "
        "(looked for *.jsonl, *.ndjson, *.json, *.jsons, *.log, *.trace)\n"
    )


def test_a_stray_file_is_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad file in a directory costs one warning line; the others are analyzed."""
    traces = tmp_path / "traces"
    traces.mkdir()
    sample_trace().write(traces / "t.jsonl")
    (traces / "agent.log").write_text("agent started\n")
    code, out = run(["replays", "traces"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "sess_1" in out
    monkeypatch.setattr(sys, "argv", ["acp-trace", "replays", "traces"])
    with pytest.raises(SystemExit):
        main()
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "acp-trace: skipped traces/agent.log: expected an acp-trace v1 trace or an ACP capture in "
        "a known format (jsonrpc, zed, conductor, inspector, thinkwell, acpx, vibe, acp-devtools), found text that is not JSON "
        "('agent started') at the start"
    ]


def test_summary_of_a_damaged_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """summary says how many records were lost in how many gaps, what the tap dropped, the
    malformed lines, and lists the files skipped (golden summary-damaged.txt)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    b = TraceBuilder(agent="demo-agent", version="9.9")
    b.request("session/prompt", {"sessionId": "s1", "prompt": []})
    b.seq += 11  # eleven records lost in one gap
    b.update("s1", "agent_message_chunk")
    b.event("dropped", count=3)
    b.lines.append(b'{"seq": 99, "t_ns": 1, "src": "agent", "msg": {broken')
    b.write(folder / "a.jsonl")
    (folder / "agent.log").write_text("agent started\n")
    (folder / "empty.jsonl").write_text("")
    code, out = run(["summary", "traces"], tmp_path, monkeypatch, capsys)
    golden = GOLDEN / "summary-damaged.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(out)
    assert code == 0 and out == golden.read_text()


def test_debug_adds_the_traceback_to_the_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--debug prints the traceback, then the same one line; exit 2 either way."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["acp-trace", "--debug", "summary", "missing.jsonl"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("Traceback")
    assert err.endswith("acp-trace: missing.jsonl: no such file or directory\n")
