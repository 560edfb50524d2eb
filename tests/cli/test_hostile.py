"""Hostile trace text: control characters never reach a terminal raw in any text output, and
CSV cells that start like a formula are neutralized (numbers stay numbers)."""

from __future__ import annotations

import csv
import io
import unicodedata
from pathlib import Path

import orjson
import polars as pl
import pytest

from clirun import Cli
from tracebuilder import TraceBuilder

AGENT = "evil\x1b]0;pwned\x07agent"
VERSION = "1\x9b31m"
SESSION = "sess\x1b[31m\u202eab"
CHILD = "child\nFAKE LINE"
REQUEST_ID = "id\x1b[2J"
STDERR = "boom \x1b[2J\r\u2066done"


def hostile(path: Path) -> Path:
    """A v2 trace whose agent, version, sessions, a request id, a method, an update kind and a
    stderr line carry terminal escapes, C1, bidi controls and a newline."""
    b = TraceBuilder(agent=AGENT, version=VERSION)
    rid = b.request(
        "session/resume", {"sessionId": SESSION, "cwd": "/", "replayFrom": {"type": "start"}},
        id=REQUEST_ID,
    )  # fmt: skip
    b.history(SESSION, 1)
    b.update(SESSION, "subagent_update", sessionId=CHILD)
    b.history(CHILD, 1)
    b.marker(CHILD)
    b.update(SESSION, "kind\u2066\x1b[5m")
    b.marker(SESSION)
    b.state(SESSION)
    b.response(rid, {}, dt=40)
    b.request("x/\x1b[5mblink", {"sessionId": SESSION})
    b.text("stderr", STDERR)
    b.text("agent", "=cmd|' /C calc'!A0")
    return b.write(path)


def raw_controls(text: str) -> list[str]:
    """Characters a terminal would act on (newline and tab aside), as U+XXXX."""
    return [
        f"U+{ord(c):04X}"
        for c in text
        if unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"} and c not in "\n\t\u200d"
    ]


TEXT_COMMANDS = [
    ["summary", "t.jsonl"],
    ["replays", "t.jsonl"],
    ["replays", "t.jsonl", "--wide"],
    ["timeline", "t.jsonl"],
    ["timeline", "t.jsonl", "--replays-only"],
    ["latency", "t.jsonl", "--by", "agent"],
    ["check", "t.jsonl"],
    ["fidelity", "t.jsonl"],
]


@pytest.mark.parametrize("args", TEXT_COMMANDS, ids=" ".join)
def test_text_outputs_show_trace_text_escaped(cli: Cli, tmp_path: Path, args: list[str]) -> None:
    """No raw control, bidi or C1 character from the trace on stdout or stderr."""
    hostile(tmp_path / "t.jsonl")
    result = cli(*args, width=200)
    assert result.code in (0, 1)
    assert raw_controls(result.out) == [] and raw_controls(result.err) == []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_fidelity_shows_hostile_message_text_escaped(cli: Cli, tmp_path: Path, fmt: str) -> None:
    """Message text from a trace (escapes, C1, bidi, a newline) in each difference `fidelity`
    lists comes out escaped, as text and as JSON."""
    b = TraceBuilder(agent=AGENT)
    for suffix in ("", "-new"):
        rid = b.resume(SESSION)
        text = [{"type": "text", "text": f"evil\x1b]0;t\x07 \u202e\x9b31m\nFAKE{suffix}"}]
        b.update(SESSION, "agent_message", messageId=REQUEST_ID + suffix, content=text)
        b.marker(SESSION)
        b.response(rid, {})
    b.write(tmp_path / "t.jsonl")
    result = cli("fidelity", "t.jsonl", "--format", fmt, width=200)
    assert result.code == 0, result.err
    assert "missing" in result.out
    assert raw_controls(result.out) == [] and raw_controls(result.err) == []
    assert "\nFAKE" not in result.out  # the newline in the text cannot start a line


@pytest.mark.parametrize("args", [["replays", "t.jsonl", "--wide"], ["timeline", "t.jsonl"]])
def test_a_newline_in_a_value_cannot_fake_a_line(cli: Cli, tmp_path: Path, args: list[str]) -> None:
    """A session id with a newline is shown as `\\n`: no line starts with its second half."""
    hostile(tmp_path / "t.jsonl")
    out = cli(*args, width=300).out
    assert "child\\nFAKE LINE" in out
    assert not any(line.startswith("FAKE LINE") for line in out.splitlines())


def test_json_output_escapes_what_a_terminal_acts_on_and_keeps_the_value(
    cli: Cli, tmp_path: Path
) -> None:
    """replays --format json: no raw C1 or bidi character, and the values are exact."""
    hostile(tmp_path / "t.jsonl")
    out = cli("replays", "t.jsonl", "--format", "json").out
    assert raw_controls(out) == []
    rows = orjson.loads(out)
    assert {r["session"] for r in rows} == {SESSION, CHILD}
    assert rows[0]["agent"] == AGENT and rows[0]["agent_version"] == VERSION
    assert rows[0]["request_id"] == REQUEST_ID


def test_warnings_and_errors_quote_trace_text_escaped(cli: Cli, tmp_path: Path) -> None:
    """A skipped file with an escape in its name, and an error that lists hostile sessions."""
    folder = tmp_path / "traces"
    folder.mkdir()
    hostile(folder / "t.jsonl")
    (folder / "bad\x1b[31m.jsonl").write_text("not a trace\x1b]0;x\x07\n")
    result = cli("timeline", "traces", "--session", "none\x1b[1m")
    assert result.code == 2
    assert raw_controls(result.err) == []
    assert "skipped traces/bad\\x1b[31m.jsonl: " in result.err
    assert "sess\\x1b[31m\\u202eab" in result.err and "none\\x1b[1m" in result.err


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_replays_csv_neutralizes_formulas(cli: Cli, tmp_path: Path) -> None:
    """With --spreadsheet, a session id starting with `=`, `+`, `-` or `@` gets a leading quote
    in the CSV; without it every cell is exact (data)."""
    b = TraceBuilder(agent="@evil", version="-1+1")
    for session in ("=HYPERLINK(1)", "+1+1", "-2-2", "@SUM(A1)"):
        rid = b.resume(session)
        b.history(session, 1)
        b.response(rid, {})
    b.write(tmp_path / "t.jsonl")
    plain = _cells(cli("replays", "t.jsonl", "--format", "csv").out)
    at = plain[0].index("session")
    assert [r[at] for r in plain[1:]] == ["=HYPERLINK(1)", "+1+1", "-2-2", "@SUM(A1)"]
    rows = _cells(cli("replays", "t.jsonl", "--format", "csv", "--spreadsheet").out)
    header = rows[0]
    sessions = [r[header.index("session")] for r in rows[1:]]
    assert sessions == ["'=HYPERLINK(1)", "'+1+1", "'-2-2", "'@SUM(A1)"]
    assert {r[header.index("agent")] for r in rows[1:]} == {"'@evil"}
    assert {r[header.index("agent_version")] for r in rows[1:]} == {"'-1+1"}


def test_export_csv_neutralizes_formulas_and_keeps_negative_numbers(
    cli: Cli, tmp_path: Path
) -> None:
    """export --format csv --spreadsheet: text cells that start like a formula are quoted; a
    negative number (here an error code) stays a number."""
    b = TraceBuilder()
    rid = b.request("session/prompt", {"sessionId": "=1+2", "prompt": []})
    b.error(rid, -32602)
    b.text("stderr", "-cmd|calc")
    b.write(tmp_path / "t.jsonl")
    assert cli("export", "t.jsonl", "-f", "csv", "--spreadsheet", "-o", "out/").code == 0
    records = pl.read_csv(tmp_path / "out" / "records.csv", infer_schema=False)
    assert "'=1+2" in records["session_id"].to_list()
    assert "'-cmd|calc" in records["text"].to_list()
    assert "-32602" in records["error_code"].to_list()
    raw = (tmp_path / "out" / "records.csv").read_text()
    assert not any(cell.startswith(("=", "+", "@")) for row in _cells(raw) for cell in row)
