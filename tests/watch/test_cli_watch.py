"""`acp-trace watch` from the command line: JSON lines without a terminal, the default folder,
one-line errors for a folder that is not there, options that do not go together and a missing
[watch] extra; trace text escaped in the JSON."""

from __future__ import annotations

import builtins
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clirun import Cli, runner
from tracebuilder import TraceBuilder


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return runner(tmp_path, monkeypatch, capsys)


def _trace(path: Path, session: str = "sess_1") -> Path:
    b = TraceBuilder(agent="demo-agent", version="9.9")
    rid = b.resume(session)
    b.history(session, 2)
    b.state(session)
    b.response(rid, {}, dt=300)
    b.event("exit", code=0, signal=None)
    return b.write(path)


def test_once_prints_the_events_of_a_finished_trace_as_json_lines(cli: Cli, tmp_path: Path) -> None:
    _trace(tmp_path / "t.jsonl")
    result = cli("watch", "--once", "t.jsonl")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "trace_started" and names[-1] == "trace_ended"
    assert names.index("replay_started") < names.index("response")
    response = next(e for e in events if e["event"] == "response")
    assert response["outcome"] == "unmarked" and response["gap_ms"] == pytest.approx(301.0)
    assert "marker-missing" in [e.get("rule") for e in events]


def test_trace_text_is_escaped_in_the_json(cli: Cli, tmp_path: Path) -> None:
    """A session id with ESC, C1 and bidi characters reaches stdout as JSON escapes only."""
    _trace(tmp_path / "t.jsonl", session="s\x1b[31m\x9b\u202e")
    result = cli("watch", "--format", "jsonl", "--once", "t.jsonl")
    assert "\x1b" not in result.out and "\x9b" not in result.out and "\u202e" not in result.out
    events = [json.loads(line) for line in result.out.splitlines()]
    started = next(e for e in events if e["event"] == "replay_started")
    assert started["session"] == "s\x1b[31m\x9b\u202e"


def test_the_default_folder_is_the_one_record_writes_to(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    _trace(folder / "a.jsonl")
    monkeypatch.setenv("ACP_TRACE_DIR", str(folder))
    result = cli("watch", "--until-ended")
    assert result.code == 0, result.err
    assert json.loads(result.out.splitlines()[-1])["event"] == "trace_ended"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["watch", "nowhere"],
            "acp-trace: nowhere: no such directory (expected a trace file or a folder of traces)\n",
        ),
        (
            ["watch", "--format", "screen", "--once", "."],
            "acp-trace: --until-ended and --once go with --format jsonl (the screen runs until q)\n",
        ),
    ],
)
def test_mistakes_are_one_line(cli: Cli, args: list[str], message: str) -> None:
    result = cli(*args)
    assert (result.code, result.err, result.out) == (2, message, "")


def test_a_missing_default_folder_says_which_and_why(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_TRACE_DIR", str(tmp_path / "none"))
    result = cli("watch")
    assert result.code == 2
    assert result.err == (
        f"acp-trace: {tmp_path / 'none'}: no such directory (the folder `acp-trace record` "
        "writes to without -o; record a trace first, or name a trace or a folder)\n"
    )


def test_the_screen_without_textual_names_the_extra(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = builtins.__import__

    def no_textual(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "textual" or name.startswith("textual."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_textual)
    result = cli("watch", "--format", "screen", ".")
    assert (result.code, result.err) == (
        2,
        "acp-trace: watch on a terminal needs Textual: pip install -e '.[watch]' in the acp-trace clone "
        "(or use --format jsonl)\n",
    )


def test_once_on_a_folder_without_a_trace_is_an_error(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("watch", "--once", "empty")
    assert (result.code, result.err) == (
        2,
        "acp-trace: empty: no trace to read (looked for acp-trace v1 traces)\n",
    )


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_jsonl_with_128_plus_n(tmp_path: Path, signum: int) -> None:
    """`watch --format jsonl` following a folder ends on SIGINT, SIGTERM or SIGHUP with exit
    130, 143 or 129 and one line saying which (SIGINT exited 0)."""
    (tmp_path / "stray.jsonl").write_bytes(b"not a trace\n")  # its `skipped` says it is up
    command = [str(Path(sys.executable).parent / "acp-trace"), "watch", "--format", "jsonl", "."]
    watch = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert watch.stdout is not None
    assert json.loads(watch.stdout.readline())["event"] == "skipped"
    watch.send_signal(signum)
    _out, err = watch.communicate(timeout=120)
    name = signal.Signals(signum).name
    assert watch.returncode == 128 + signum
    assert err.startswith(f"acp-trace: interrupted by {name}")
