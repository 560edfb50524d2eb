"""Tables in a terminal: `replays` fits the width it is given (and the real terminal's),
slowest first, the chosen columns; colour only on a terminal and without NO_COLOR."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import orjson
import pytest

from clirun import Cli
from tracebuilder import TraceBuilder

AGENT = "@agentclientprotocol/claude-agent-acp"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def slow_and_fast(path: Path) -> Path:
    """Three replays of a long-named agent on UUID sessions: 30 ms, 1500 ms, 400 ms."""
    b = TraceBuilder(agent=AGENT, version="0.101.0")
    for number, took in ((1, 30), (2, 1500), (3, 400)):
        session = f"0198c0de-0000-7000-8000-00000000020{number}"
        rid = b.resume(session)
        b.history(session, number)
        b.marker(session)
        b.state(session)
        b.response(rid, {}, dt=took)
    return b.write(path)


@pytest.mark.parametrize("width", [80, 120, 200])
def test_replays_fits_the_width_with_the_first_columns(
    cli: Cli, tmp_path: Path, width: int
) -> None:
    """Every line fits; the header holds agent, version, session, outcome, gap ms and
    response ms (at 80 columns history updates and gap source give way to the names, and a
    line says so); at 200 columns no cell wraps (a line per replay)."""
    slow_and_fast(tmp_path / "t.jsonl")
    out = cli("replays", "t.jsonl", width=width).out
    lines = out.splitlines()
    assert max(map(len, lines)) <= width
    rule = next(i for i, line in enumerate(lines) if set(line) == {"-"})
    header = " ".join(" ".join(lines[:rule]).split())
    for word in ("agent", "version", "session", "outcome", "gap", "ms", "response"):
        assert word in header.split()
    if width == 80:
        assert "Left out to fit 80 columns: gap source, history updates" in out
    else:
        assert "history" in header.split() and "Left out" not in out
    if width == 200:
        body = lines[rule + 1 : rule + 4]
        assert [
            AGENT in line and "0198c0de-0000-7000-8000-00000000020" in line for line in body
        ] == [True] * 3


def test_replays_puts_the_slowest_first(cli: Cli, tmp_path: Path) -> None:
    """Rows are sorted by response time, slowest first (1500, 400, 30 ms)."""
    slow_and_fast(tmp_path / "t.jsonl")
    out = cli("replays", "t.jsonl", "--columns", "session,response_ms").out
    sessions = re.findall(r"00000000020(\d)", out)
    assert sessions == ["2", "3", "1"]


def test_replays_json_and_csv_keep_every_column_in_trace_order(cli: Cli, tmp_path: Path) -> None:
    """--format json holds every column of the table, rows in the order of the trace."""
    slow_and_fast(tmp_path / "t.jsonl")
    rows = orjson.loads(cli("replays", "t.jsonl", "--format", "json").out)
    assert [r["session"][-1] for r in rows] == ["1", "2", "3"]
    assert "last_history_to_response_ms" in rows[0] and "history_bytes" in rows[0]
    header = cli("replays", "t.jsonl", "--format", "csv").out.splitlines()[0].split(",")
    assert header == list(rows[0])


def test_unknown_columns_are_refused_with_the_names(cli: Cli, tmp_path: Path) -> None:
    """--columns with a name that is no column: exit 2, the names listed."""
    slow_and_fast(tmp_path / "t.jsonl")
    result = cli("replays", "t.jsonl", "--columns", "session,speed")
    assert result.code == 2
    assert result.err.startswith(
        "acp-trace: --columns speed: no such column; the columns are trace, "
    )
    assert result.err.rstrip().endswith(
        "gap_ms, gap_source, history_updates, history_bytes, live_updates, source, "
        "source_complete, source_messages, replay_missing, replay_extra, replay_duplicated, "
        "replay_id_changed, replay_reordered, replay_truncated, replay_truncated_bytes, "
        "bytes_by_kind, largest_update_bytes, largest_update_kind, largest_update_seq, "
        "children_bytes, longest_silence_ms, quiet_end_ms, updates_after_quiet_end, "
        "stderr_lines_in_gap, last_stderr_in_gap"
    )


def test_no_replay_is_said_in_words(cli: Cli, tmp_path: Path) -> None:
    """A trace without a replaying request prints one sentence, not an empty table."""
    b = TraceBuilder()
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.write(tmp_path / "t.jsonl")
    result = cli("replays", "t.jsonl")
    assert result.out == "No replaying session/resume or session/load in these traces.\n"


def _on_a_terminal(args: list[str], columns: int, env: dict[str, str]) -> str:
    """Run acp-trace on a pseudo-terminal of `columns` columns (no COLUMNS variable)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_trace", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**clean, "TERM": "xterm-256color", **env},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 200])
def test_replays_measures_the_real_terminal(tmp_path: Path, columns: int) -> None:
    """On a real (pseudo) terminal of 80 or 200 columns, without COLUMNS, every line fits."""
    trace = slow_and_fast(tmp_path / "t.jsonl")
    out = _on_a_terminal(["replays", str(trace)], columns, {})
    lines = ANSI.sub("", out).splitlines()
    assert len(lines) > 4 and max(map(len, lines)) <= columns
    if columns == 200:
        assert max(map(len, lines)) > 80


def test_colour_only_on_a_terminal_and_never_with_no_color(cli: Cli, tmp_path: Path) -> None:
    """A terminal gets a coloured outcome; NO_COLOR and a pipe get plain text."""
    trace = slow_and_fast(tmp_path / "t.jsonl")
    assert ANSI.search(_on_a_terminal(["replays", str(trace)], 120, {}))
    assert not ANSI.search(_on_a_terminal(["replays", str(trace)], 120, {"NO_COLOR": "1"}))
    assert not ANSI.search(cli("replays", "t.jsonl").out)


def test_reading_many_traces_shows_a_progress_bar_on_a_terminal_only(
    cli: Cli, tmp_path: Path
) -> None:
    """25 traces on a terminal: a `reading: ... N/25 traces` bar on stderr; none in a pipe."""
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(25):
        slow_and_fast(folder / f"t{n:02}.jsonl")
    shown = ANSI.sub("", _on_a_terminal(["summary", str(folder)], 120, {}))
    assert re.search(r"reading:.*\d+/25 traces", shown)
    assert "reading" not in cli("summary", "many").err
