"""The report's section "What a client would have suffered" (render/report/weight_section.py) by
its text: per agent the worst line, silence and quiet-window misread, then the heaviest
replays with their largest lines, the longest silences, the updates taken for live; trace text
escaped in Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

from acp_trace import analyze
from acp_trace.render.report.bundle import build_blocks, markdown_report
from acp_trace.render.report.document import to_html
from acp_trace.weight import weight_options
from tracebuilder import TraceBuilder

BIG = 70_000


def suffering_trace(path: Path, title: str = "Run the tests") -> Path:
    """Agent `heavy` 3.1: a resume with a 400 ms pause after 5 updates, a 2.5 s silence, a
    tool output over 64 KiB; agent `light` 1.0: a small, quick resume."""
    b = TraceBuilder(agent="heavy", version="3.1")
    rid = b.resume("s1")
    for i in range(10):
        b.update("s1", "agent_message_chunk", dt=400.0 if i == 5 else 1.0,
                 content={"type": "text", "text": "word"})  # fmt: skip
    b.update("s1", "tool_call", toolCallId="c1", title=title, status="pending", dt=2500.0)
    b.update("s1", "tool_call_update", toolCallId="c1", status="completed",
             content=[{"type": "content", "content": {"type": "text", "text": "x" * BIG}}])  # fmt: skip
    b.marker("s1")
    b.response(rid)
    heavy = b.write(path / "heavy.jsonl")
    b = TraceBuilder(agent="light", version="1.0")
    rid = b.resume("s2")
    b.history("s2", 1)
    b.marker("s2")
    b.response(rid)
    b.write(path / "light.jsonl")
    return heavy


def section(md: str) -> str:
    start = md.index("## What a client would have suffered")
    return md[start : md.index("\n## ", start + 1)]


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The rows of the first table after `heading`, as cells."""
    part = text[text.index(heading) :]
    lines = [x for x in part.splitlines() if x.startswith("| ")]
    return [[c.strip() for c in x.strip("|").split("|")] for x in lines[2:]]


def test_the_section_names_the_worst_line_silence_and_misread_per_agent(tmp_path: Path) -> None:
    """The per-agent table: heavy's 64 KiB line, its 2.5 s silence past 2 s, one replay cut
    short and the updates after the quiet end; light passes nothing."""
    suffering_trace(tmp_path)
    a = analyze(tmp_path)
    text = section(markdown_report(a))
    heavy = a.replays.filter(a.replays["agent"] == "heavy").row(0, named=True)
    rows = table_rows(text, "| agent | version | replays |")
    assert rows[0][:2] == ["heavy", "3.1"] and rows[1][:2] == ["light", "1.0"]
    assert rows[0][4:] == [
        f"{heavy['largest_update_bytes']:,}", "64 KiB", "2,500.0", "2 s", "1",
        f"{heavy['updates_after_quiet_end']:,}",
    ]  # fmt: skip
    assert rows[1][5] == "-" and rows[1][7] == "-" and rows[1][8] == "0"
    assert "(64 KiB, 4 MB, 16 MiB, 64 MiB)" in text and "(2 s, 5 s, 10 s, 60 s, 120 s)" in text


def test_the_heaviest_replays_name_their_largest_line_and_its_tool(tmp_path: Path) -> None:
    """Kind, tool (the tool_call's title for its update), bytes, the limit, the seq."""
    suffering_trace(tmp_path)
    a = analyze(tmp_path)
    text = section(markdown_report(a))
    row = a.replays.filter(a.replays["agent"] == "heavy").row(0, named=True)
    (heavy, *_rest) = table_rows(text, "### The heaviest replays and their largest lines")
    assert heavy[5:10] == [
        "tool\\_call\\_update", "Run the tests", f"{row['largest_update_bytes']:,}", "64 KiB",
        str(row["largest_update_seq"]),
    ]  # fmt: skip
    silences = table_rows(text, "### The longest silences")
    assert silences[0][4:6] == ["2,500.0", "2 s"]
    quiet = text[text.index("### What a quiet-window client") :]
    assert "1 replay of 2 would have been cut short" in quiet


def test_your_own_limit_and_deadline_are_named(tmp_path: Path) -> None:
    """--frame-limit 1KB=tiny and --deadline 300=probe: the section names them."""
    suffering_trace(tmp_path)
    options = weight_options(["1KB=tiny"], ["300=probe"])
    a = analyze(tmp_path, weight=options)
    rows = table_rows(section(markdown_report(a)), "| agent | version | replays |")
    assert rows[1][5] == "-" and rows[0][5] == "64 KiB"
    light = a.replays.filter(a.replays["agent"] == "light").row(0, named=True)
    assert light["largest_update_bytes"] < 1000  # under "tiny": no limit passed
    assert rows[0][7] == "2 s" and "tiny" in section(markdown_report(a))


def test_a_hostile_tool_title_is_escaped_in_markdown_and_html(tmp_path: Path) -> None:
    """A title with HTML and Markdown in it is text in both documents."""
    title = "<script>alert(1)</script> **bold** | pipe"
    suffering_trace(tmp_path, title=title)
    a = analyze(tmp_path)
    md = section(markdown_report(a))
    assert "<script>" not in md and "**bold**" not in md
    html = to_html(build_blocks(a, html=True), {}, "t")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_no_replay_is_said(tmp_path: Path) -> None:
    """Traces without a replay: the section says there is nothing to weigh."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    a = analyze(b.write(tmp_path / "t.jsonl"))
    assert "No replaying session/resume or session/load to weigh." in section(markdown_report(a))
