"""The report bundle: report.md for an issue, self-contained report.html, charts, escaping."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from acp_trace import analyze
from acp_trace.cli import app
from acp_trace.render.report.bundle import CHARTS, cell, write_report
from acp_trace.render.report.document import Code, Table, md_text, to_html, to_markdown
from tracebuilder import TraceBuilder

SCRIPT = "<script>alert(1)</script>"
SECRET = "SECRET PROMPT TEXT"


def hostile_trace(path: Path) -> Path:
    """Trace text meant to break out: script tags, pipes, backticks, a newline, in the agent
    name and version, session ids and messages."""
    b = TraceBuilder(agent=f"{SCRIPT}|agent", version="`1`")
    session = f"s{SCRIPT}|x`y\nz"
    rid = b.resume(session)
    b.update(session, "user_message", messageId="m1", content={"type": "text", "text": SECRET})
    b.update(session, "agent_message", content={"type": "text", "text": SCRIPT})
    b.update(session, "state_update", state="idle")
    b.response(rid, dt=40)  # no marker: marker-missing, message-id-missing findings
    p = b.request("session/prompt", {"sessionId": session, "prompt": [{"text": SECRET}]})
    b.response(p, dt=5)
    return b.write(path)


def good_trace(path: Path) -> Path:
    b = TraceBuilder(agent="good-agent", version="2.0")
    for session, gap in (("a", 100.0), ("b", 250.0)):
        rid = b.resume(session)
        b.history(session, 2)
        b.marker(session)
        b.state(session)
        b.response(rid, dt=gap)
    return b.write(path)


class _Tags(HTMLParser):
    """Collects start tags and, per table, the cell count of each row."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.rows: list[list[int]] = []
        self.imgs: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.rows.append([])
        elif tag == "tr":
            self.rows[-1].append(0)
        elif tag in ("td", "th"):
            self.rows[-1][-1] += 1
        elif tag == "img":
            self.imgs.append(dict(attrs))


def md_tables(text: str) -> list[list[str]]:
    tables: list[list[str]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    return tables


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_report_writes_markdown_html_and_three_charts(tmp_path: Path) -> None:
    """report.md links gap.png, replay.png and latency.png beside it; report.html embeds the
    same PNG bytes and loads nothing from outside."""
    a = analyze(good_trace(tmp_path / "good.jsonl"))
    files = write_report(a, tmp_path / "out", command="acp-trace report good.jsonl -o out")
    assert sorted(p.name for p in files.charts) == sorted(CHARTS)
    md = files.markdown.read_text()
    for name in CHARTS:
        assert f"]({name})" in md
    page = files.html.read_text()
    parser = _Tags()
    parser.feed(page)
    embedded = {base64.b64decode(str(i["src"]).split(",", 1)[1]) for i in parser.imgs}
    assert embedded == {p.read_bytes() for p in files.charts}
    assert all(str(i["src"]).startswith("data:image/png;base64,") for i in parser.imgs)
    assert not {"script", "link", "iframe"} & set(parser.tags)
    assert "default-src 'none'" in page


def test_report_lists_agents_replays_gaps_findings_and_the_command(tmp_path: Path) -> None:
    """The Markdown names each agent and version, has a row per replay with outcome and gap,
    counts findings per severity, and shows the exact command."""
    good_trace(tmp_path / "good.jsonl")
    hostile_trace(tmp_path / "bad.jsonl")
    a = analyze(tmp_path)
    md = write_report(a, tmp_path / "out", command="acp-trace report x -o 'my dir'").markdown
    text = md.read_text()
    assert "| good-agent | 2.0 | 2 | 1 | 2 |" in text
    for row in a.replays.filter(pl.col("agent") == "good-agent").iter_rows(named=True):
        gap = cell(row["marker_to_response_ms"])
        assert f"| {row['session']} | - | session/resume | {row['request_id']} | complete |" in text
        assert f"| {gap} |" in text
    findings = a.findings()
    counts = {s: findings.filter(pl.col("severity") == s).height for s in ("error", "warning")}
    assert counts["error"] > 0
    assert f"{counts['error']} error, {counts['warning']} warning" in text
    assert "| error | marker-missing | 1 |" in text
    assert "```sh\nacp-trace report x -o 'my dir'\n```" in text


def test_hostile_trace_text_is_escaped_in_markdown_and_html(tmp_path: Path) -> None:
    """Script tags, pipes, backticks and newlines from a trace appear only escaped: no raw
    `<script>` in either file (the command line is literal only inside its Markdown code
    fence, where it is not HTML), every Markdown and HTML table row keeps its column count, and
    message contents are not in the report at all."""
    a = analyze(hostile_trace(tmp_path / "bad.jsonl"))
    files = write_report(a, tmp_path / "out", command=f"acp-trace report {SCRIPT}")
    md, page = files.markdown.read_text(), files.html.read_text()
    fence = f"```sh\nacp-trace report {SCRIPT}\n```\n"
    assert md.endswith(fence)
    assert "<pre><code>acp-trace report &lt;script&gt;" in page
    for text in (md.removesuffix(fence), page):
        assert "<script" not in text.lower()
        assert SECRET not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\|agent" in md
    for table in md_tables(md):
        assert len({unescaped_pipes(line) for line in table}) == 1, table
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags
    for rows in parser.rows:
        assert len(set(rows)) == 1


def test_markdown_escaping_keeps_text_literal() -> None:
    """md_text turns markup characters into escapes or entities and newlines into spaces."""
    assert md_text("a|b`c*d_e[f]~g\\h") == "a\\|b\\`c\\*d\\_e\\[f\\]\\~g\\\\h"
    assert md_text("<b>&amp;</b>\nnext\r\nline") == "&lt;b&gt;&amp;amp;&lt;/b&gt; next line"


def test_code_fences_outgrow_backticks_in_the_command() -> None:
    """A command with a run of backticks cannot close its Markdown fence early."""
    md = to_markdown([Code("echo ```x```")])
    assert md.startswith("````sh\n") and md.rstrip().endswith("````")
    assert to_html([Code("a <b>")], {}, "t").count("a &lt;b&gt;") == 1


def test_numeric_columns_are_right_aligned_in_both_renderings() -> None:
    """Numeric columns get `---:` in Markdown and a `num` class in HTML."""
    table = Table(["name", "ms"], [["x", "1.0"]], frozenset({1}))
    assert "| --- | ---: |" in to_markdown([table])
    assert '<td class="num">1.0</td>' in to_html([table], {}, "t")


def test_report_of_traces_without_replays_says_so(tmp_path: Path) -> None:
    """With no replay the report is still written and says there is none."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/"})
    files = write_report(analyze(b.write(tmp_path / "t.jsonl")), tmp_path / "out")
    text = files.markdown.read_text()
    assert "No replaying session/resume or session/load in these traces." in text
    assert all(p.stat().st_size > 0 for p in files.charts)


def test_cli_report_records_the_command_and_says_where(tmp_path: Path) -> None:
    """`acp-trace report TRACE -o DIR` prints one line naming the files."""
    trace = good_trace(tmp_path / "good.jsonl")
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["report", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.count("\n") == 1
    assert str(out / "report.md") in result.output
    assert (out / "report.html").is_file()
    assert "acp-trace report" in (out / "report.md").read_text()
