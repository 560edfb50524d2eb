"""`acp-trace timeline` marks a line longer than a client limit and a silence past a client
deadline (render/timeline_weight.py), in its text and its JSON."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from acp_trace import analyze
from acp_trace.render.report import format_timeline
from acp_trace.render.timeline_json import timeline_rows
from acp_trace.render.timeline_weight import weight_marks
from acp_trace.weight import weight_options
from clirun import Cli, runner
from tracebuilder import TraceBuilder


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return runner(tmp_path, monkeypatch, capsys)


def marked_trace(path: Path) -> Path:
    """A resume (seq 3) whose 2nd update (seq 5) comes 2.5 s after the first (seq 4) and holds
    70,000 bytes of tool output; a client line of 5 MB after the response; a session/new
    answered after 6 s."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.update("s1", "agent_message_chunk", content={"type": "text", "text": "hi"})
    b.update("s1", "tool_call_update", dt=2500.0, toolCallId="c1",
             content=[{"type": "content", "content": {"type": "text", "text": "x" * 70_000}}])  # fmt: skip
    b.marker("s1")
    b.response(rid)
    b.request(
        "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "y" * 5_000_000}]}
    )
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s9"}, dt=6000.0)
    return b.write(path)


def marks_of(text: str) -> list[str]:
    """The mark lines of a text timeline (after its legend), stripped."""
    body = text[text.index("\n== ") :]
    lines = [re.sub(r"^\|\s+", "| ", x.strip()) for x in body.splitlines()]
    return [x for x in lines if x.startswith(("| >>", "| ..", ">>", ".."))]


def test_the_text_timeline_marks_long_lines_and_silences(tmp_path: Path) -> None:
    """Under each long line its bytes and the largest limit it passes (the client's line too);
    above the line that ends a silence, how long, from which seq to which, the deadline; the
    legend says what the marks are."""
    a = analyze(marked_trace(tmp_path / "t.jsonl"))
    marks = weight_marks(a.timeline, a.facts.windows, a.weight)
    text = format_timeline(a.timeline, a.facts.windows, marks=marks)
    size = a.timeline.filter(a.timeline["seq"] == 5)["bytes"][0]
    prompt = a.timeline.filter(a.timeline["method"] == "session/prompt")["bytes"][0]
    who = {t.name: t.clients for t in a.weight.limits + a.weight.deadlines}
    assert marks_of(text) == [
        "| .. 2,500 ms with no line from the agent, seq 4 to seq 5: past the 2 s deadline of "
        + who["2 s"],
        f"| >> a line of {size:,} bytes: longer than the 64 KiB limit of " + who["64 KiB"],
        f">> a line of {prompt:,} bytes: longer than the 4 MB limit of " + who["4 MB"],
        ".. 6,000 ms with no line from the agent, seq 9 to seq 10: past the 5 s deadline of "
        + who["5 s"],
    ]
    lines = text.splitlines()
    silence = next(i for i, x in enumerate(lines) if "2,500 ms with no line" in x)
    assert " 5  update tool_call_update" in lines[silence + 1]
    assert ">> a line of" in lines[silence + 2]
    assert ">> a line longer than a client's limit, .. a silence past a client's deadline" in text


def test_no_marks_no_legend_line(tmp_path: Path) -> None:
    """A timeline with nothing to mark prints the legend it always printed."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.history("s1", 1)
    b.marker("s1")
    b.response(rid)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    text = format_timeline(
        a.timeline, a.facts.windows, marks=weight_marks(a.timeline, a.facts.windows, a.weight)
    )
    assert "client's limit" not in text and not marks_of(text)


def test_the_json_timeline_has_the_marks_as_columns(tmp_path: Path) -> None:
    """line_bytes and limit_passed on the long lines, silence_ms, silence_from_seq and
    deadline_passed on the line that ends a silence; null elsewhere."""
    a = analyze(marked_trace(tmp_path / "t.jsonl"), weight=weight_options(["1MiB=mine"]))
    rows = timeline_rows(
        a.timeline, a.facts.windows, marks=weight_marks(a.timeline, a.facts.windows, a.weight)
    )
    over = rows.filter(rows["limit_passed"].is_not_null())
    assert over["seq"].to_list() == [5, 8] and over["limit_passed"].to_list() == ["64 KiB", "4 MB"]
    quiet = rows.filter(rows["silence_ms"].is_not_null())
    assert quiet.select("seq", "silence_ms", "silence_from_seq", "deadline_passed").rows() == [
        (5, 2500.0, 4, "2 s"),
        (10, 6000.0, 9, "5 s"),
    ]


def test_timeline_takes_the_weight_options(cli: Cli, tmp_path: Path) -> None:
    """`timeline --deadline 0.5=tight --format json`: a user's deadline names a silence."""
    marked_trace(tmp_path / "t.jsonl")
    done = cli("timeline", "t.jsonl", "--deadline", "0.5=tight", "--format", "json")
    assert done.code == 0
    doc = orjson.loads(done.out)
    named = {d for d in doc["deadline_passed"] if d}
    assert "tight" in named and "5 s" in named
