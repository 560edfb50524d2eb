"""The report bundle: report.md for an issue, self-contained report.html, charts, escaping."""

from __future__ import annotations

import base64
import dataclasses
import re
import stat
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from acp_trace import analyze
from acp_trace.cli import app
from acp_trace.quantities import counted
from acp_trace.quantities import duration as ms
from acp_trace.quantities import ms as table_ms
from acp_trace.render.report import bundle, document
from acp_trace.render.report.bundle import CHARTS, MARKDOWN_LIMIT, markdown_report, write_report
from acp_trace.render.report.context import HTML, MARKDOWN, context
from acp_trace.render.report.document import (
    Code,
    Paragraph,
    Table,
    md_text,
    to_html,
    to_markdown,
)
from acp_trace.render.report.sections import build
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

CONTROL = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # what a terminal or a bidi reader acts on
KEPT = "\n\u200d"  # newlines, and the zero width joiner of emoji sequences


def cell(value: float) -> str:
    """A number as the report's tables show it."""
    return table_ms(value)


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


def sections(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("#")]


def test_report_writes_markdown_html_csv_and_four_charts(tmp_path: Path) -> None:
    """report.md names gap.png, replay.png, weight.png and latency.png beside it in lines that say to drag
    them into the issue (no relative image link, which an issue cannot show); report.html
    embeds the same PNG bytes and loads nothing from outside; replays.csv has every replay;
    every file is private, the charts too."""
    a = analyze(good_trace(tmp_path / "good.jsonl"))
    files = write_report(a, tmp_path / "out", command="acp-trace report good.jsonl -o out")
    assert sorted(p.name for p in files.charts) == sorted(CHARTS)
    md = files.markdown.read_text()
    assert "](" not in md and "<img" not in md
    for name in CHARTS:
        (line,) = [x for x in md.splitlines() if f"`{name}`" in x]
        assert "drag it into the issue" in line
    page = files.html.read_text()
    parser = _Tags()
    parser.feed(page)
    embedded = {base64.b64decode(str(i["src"]).split(",", 1)[1]) for i in parser.imgs}
    assert embedded == {p.read_bytes() for p in files.charts}
    assert all(str(i["src"]).startswith("data:image/png;base64,") for i in parser.imgs)
    assert not {"script", "link", "iframe"} & set(parser.tags)
    assert "default-src 'none'" in page
    csv = pl.read_csv(files.csv)
    assert csv.height == a.replays.height
    assert csv["gap_ms"].to_list() == pytest.approx([a_ for a_ in csv["marker_to_response_ms"]])
    for path in (files.markdown, files.html, files.csv, *files.charts):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700


def test_report_puts_the_key_facts_first_and_the_replay_table_last(tmp_path: Path) -> None:
    """The headline and the agents table (gap p50, p90, max first, then agent, version,
    outcomes) come first, then findings by rule, and the per-replay table last; each agent
    version's gap numbers are its own, the command is shown exactly."""
    good_trace(tmp_path / "good.jsonl")
    hostile_trace(tmp_path / "bad.jsonl")
    a = analyze(tmp_path)
    md = write_report(a, tmp_path / "out", command="acp-trace report x -o 'my dir'").markdown
    text = md.read_text()
    assert sections(text) == [
        "# acp-trace report",
        "## Agents, outcomes and gaps",
        "## Findings by rule",
        "## Is the replay the session?",
        "## Slowest replay",
        "## What a client would have suffered",
        "### The heaviest replays and their largest lines",
        "### The longest silences",
        "### What a quiet-window client would have taken for live",
        "## Latency",
        "## Recordings that lack lines",  # the test traces end without the tap's exit event
        "## Command",
        "## Replays, slowest first",
    ]
    tables = md_tables(text)
    assert tables[0][0] == (
        "| gap p50 ms | gap p90 ms | gap max ms | agent | version | gap from "
        "| largest phase in the gap | replays | outcomes | traces | protocol |"
    )
    good = a.replays.filter(pl.col("agent") == "good-agent")["marker_to_response_ms"]
    p50, top = cell(good.quantile(0.5, "linear")), cell(good.max())
    assert (
        f"| {p50} | - | {top} | good-agent | 2.0 | replay\\_complete marker | - | 2 | complete 2 | 1 | v2 |"
        in text
    )
    findings = a.findings()
    counts = {s: findings.filter(pl.col("severity") == s).height for s in ("error", "warning")}
    assert counts["error"] > 0
    said = f"{counted(counts['error'], 'error')}, {counted(counts['warning'], 'warning')}"
    assert said in text  # as check's text counts them
    assert "| error | marker-missing | 1 | 1 | bad.jsonl |" in text
    assert "```sh\nacp-trace report x -o 'my dir'\n```" in text
    last = tables[-1]
    assert last[0].startswith("| gap ms | gap from | response ms | outcome | agent |")
    rows = [line for line in last[2:] if "good-agent" in line]
    assert [line.split(" | ")[2] for line in rows] == sorted(
        (cell(v) for v in a.replays.filter(pl.col("agent") == "good-agent")["response_ms"]),
        key=lambda v: -float(v.replace(",", "")),
    )


def phased_trace(path: Path) -> Path:
    """Two resumes of claude-agent-acp with its stderr in their gaps (the second with the
    longer sdk-initialize, inside an umbrella `session-ready`), then a quiet agent."""
    b = TraceBuilder(agent="claude-agent-acp", version="0.101.0")
    for session, took in (("s1", 300), ("s2", 700)):
        rid = b.resume(session)
        b.history(session, 2)
        b.text("stderr", "[session/create] sessionId=x phase=models durationMs=20", dt=30)
        b.text(
            "stderr", f"[session/create] sessionId=x phase=sdk-initialize durationMs={took}", took
        )
        b.text("stderr", f"[session/load] sessionId=x phase=session-ready durationMs={took + 60}")
        b.response(rid, dt=40)
    b.text("stderr", "[session/create] sessionId=x phase=after-the-gap durationMs=5000")
    quiet = TraceBuilder(agent="quiet-agent", version="1.0")
    rid = quiet.resume("q1")
    quiet.history("q1", 1)
    quiet.marker("q1")
    quiet.text("stderr", "starting worker")
    quiet.response(rid, dt=90)
    quiet.write(path.with_name("quiet.jsonl"))
    return b.write(path)


def test_the_gap_table_names_the_largest_phase_inside_a_gap(tmp_path: Path) -> None:
    """Per agent version: the leaf phase with the most time inside one gap, "NAME X ms of Y
    ms" with Y that replay's gap (the umbrella phase and lines after the gap do not count);
    "-" for an agent whose stderr names no phase; in report.md and report.html alike."""
    phased_trace(tmp_path / "claude.jsonl")
    a = analyze(tmp_path)
    phases = a.gap_phases.filter(pl.col("phase") == "sdk-initialize", pl.col("session") == "s2")
    in_gap = phases["in_gap_ms"][0]
    gap = a.replays.filter(pl.col("session") == "s2")["last_history_to_response_ms"][0]
    assert 0 < in_gap < gap
    expected = f"sdk-initialize {ms(in_gap)} of {ms(gap)}"
    files = write_report(a, tmp_path / "out")
    rows = {line.split(" | ")[3]: line for line in md_tables(files.markdown.read_text())[0][2:]}
    assert f"| last history update (no marker) | {expected} | 2 |" in rows["claude-agent-acp"]
    assert "| replay\\_complete marker | - | 1 |" in rows["quiet-agent"]
    html = files.html.read_text()
    assert f"<td>{expected}</td>" in html


def test_the_sample_cold_resume_names_sdk_initialize(tmp_path: Path) -> None:
    """On the recorded cold resume of claude-agent-acp 0.101.0 the column reads
    "sdk-initialize 1,245 ms of 1,359 ms" (as the library's gap_phases measures it)."""
    a = analyze([SAMPLES / "claude-agent-acp-v2-resume.jsonl"])
    phase = a.gap_phases.filter(pl.col("leaf")).sort("in_gap_ms").row(-1, named=True)
    gap = a.replays["last_history_to_response_ms"][0]
    expected = f"{phase['phase']} {ms(phase['in_gap_ms'])} of {ms(gap)}"
    assert expected == "sdk-initialize 1,245 ms of 1,359 ms"
    assert f"| {expected} |" in markdown_report(a)


def test_report_of_one_slow_replay_says_it_in_one_sentence(tmp_path: Path) -> None:
    """The most common bug report, one slow replay of one agent: its headline names the
    agent, the outcome, the gap and where it was measured from, and the response time."""
    b = TraceBuilder(agent="@agentclientprotocol/claude-agent-acp", version="0.101.0")
    rid = b.resume("sess-1")
    b.history("sess-1", 2)
    b.response(rid, dt=1359.5)
    a = analyze(b.write(tmp_path / "one.jsonl"))
    text = write_report(a, tmp_path / "out").markdown.read_text()
    gap = a.replays["last_history_to_response_ms"][0]
    response = a.replays["response_ms"][0]
    headline = text.splitlines()[2]
    assert headline == (
        "1 replay: session/resume by `@agentclientprotocol/claude-agent-acp` 0.101.0, outcome "
        f"unmarked; gap {ms(gap)} from the last history update (no marker) to the response; "
        f"response after {ms(response)}."
    )


def test_report_lists_the_files_skipped_while_reading(tmp_path: Path) -> None:
    """A stray log and an empty .jsonl beside a trace are listed with their problem, and are
    not counted as traces or agents."""
    good_trace(tmp_path / "good.jsonl")
    (tmp_path / "agent.log").write_text("starting\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    a = analyze(tmp_path)
    text = write_report(a, tmp_path / "out").markdown.read_text()
    assert "read 1 trace (0 malformed lines, 2 files skipped)" in text
    skipped = md_tables(text.split("## Files skipped", 1)[1])[0]
    assert [row.split(" | ")[0] for row in skipped[2:]] == ["| agent.log", "| empty.jsonl"]
    assert "unknown agent" not in text


def test_report_of_a_thousand_traces_with_long_paths_fits_an_issue(tmp_path: Path) -> None:
    """1,000 traces deep in long folders, with long session ids: report.md stays well under
    GitHub's 65,536 characters, its replay table shows the 25 slowest and says how many more
    there are; report.html and replays.csv hold all 1,000; no absolute path anywhere."""
    root = tmp_path / ("a-long-folder-name-" * 5) / ("nested-" * 8)
    root.mkdir(parents=True)
    for i in range(1000):
        b = TraceBuilder(agent=f"agent-{i % 7}", version=f"1.{i % 3}")
        session = f"session-{i:04d}-" + "x" * 120
        rid = b.resume(session)
        b.history(session, 1)
        b.marker(session)
        b.response(rid, dt=float(10 + i))
        b.write(root / f"trace-{i:04d}-{'long-name-' * 10}.jsonl")
    files = write_report(analyze(root), tmp_path / "out")
    md = files.markdown.read_text()
    assert len(md) < MARKDOWN_LIMIT < 65_536
    table = md_tables(md.split("## Replays, slowest first", 1)[1])[0]
    assert len(table) == 2 + 25
    assert "975 more replay rows: every row is in report.html and replays.csv" in md
    assert "trace-0999-" in table[2] and not any("trace-0000-" in row for row in table)
    parser = _Tags()
    parser.feed(files.html.read_text())
    assert 1 + 1000 in [len(rows) for rows in parser.rows]  # the replays table, whole
    assert pl.read_csv(files.csv).height == 1000
    for text in (md, files.html.read_text(), files.csv.read_text()):
        assert str(tmp_path) not in text
        assert "/a-long-folder-name" not in text


def test_markdown_shrinks_its_tables_until_it_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tighter limit than the caps allow, report.md keeps fewer replay rows (and says
    how many it left out) until it fits."""
    gap_traces = [good_trace(tmp_path / f"g{i}.jsonl") for i in range(20)]
    a = analyze(gap_traces)
    whole = markdown_report(a)
    monkeypatch.setattr(bundle, "MARKDOWN_LIMIT", len(whole) - 500)
    shrunk = markdown_report(a)
    assert len(shrunk) <= len(whole) - 500
    rows = md_tables(shrunk.split("## Replays, slowest first", 1)[1])[0][2:]
    assert 0 < len(rows) < 25
    assert f"{40 - len(rows)} more replay rows" in shrunk


def test_html_says_where_the_rows_past_its_own_cap_are(tmp_path: Path) -> None:
    """report.html has every row up to its (large) cap; past it, the line points to
    replays.csv, not to itself."""
    a = analyze([good_trace(tmp_path / f"g{i}.jsonl") for i in range(3)])
    blocks = build(context(a, dataclasses.replace(HTML, replays=4)), None)
    assert Paragraph("2 more replay rows: every row is in replays.csv.") in blocks
    markdown = build(context(a, dataclasses.replace(MARKDOWN, replays=4)), None)
    assert (
        Paragraph(
            "2 more replay rows: every row is in report.html and replays.csv beside this report."
        )
        in markdown
    )


def test_hostile_trace_text_is_escaped_in_markdown_and_html(tmp_path: Path) -> None:
    """Script tags, pipes, backticks and newlines from a trace appear only escaped: no raw
    `<script>` in either file (the command line is literal only inside its Markdown code
    fence, where it is not HTML), every Markdown and HTML table row keeps its column count, and
    message contents are not in the report at all."""
    a = analyze(hostile_trace(tmp_path / "bad.jsonl"))
    files = write_report(a, tmp_path / "out", command=f"acp-trace report {SCRIPT}")
    md, page = files.markdown.read_text(), files.html.read_text()
    fence = f"```sh\nacp-trace report {SCRIPT}\n```\n"
    assert md.count(fence) == 1
    assert "<pre><code>acp-trace report &lt;script&gt;" in page
    for text in (md.replace(fence, ""), page):
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


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC retitle, BEL
        ("a\x9bb", "a\\x9bb"),  # C1
        ("abc\u202edef", "abc\\u202edef"),  # right-to-left override
        ("x\u200by\x00", "x\\u200by\\x00"),  # zero width space, NUL
        # near misses: printable text of any script, and the joiner of emoji, stay
        ("日本語 café", "日本語 café"),
        ("👨\u200d👩", "👨\u200d👩"),
    ],
)
def test_control_characters_are_escapes_in_markdown_and_html(text: str, shown: str) -> None:
    """Control, bidi and invisible characters from a trace are shown as escapes, as on the
    terminal, in every kind of block of both renderings; other text is kept."""
    blocks = [
        Paragraph(f"p {text}"),
        Table(["c"], [[f"cell {text}"], [f"@x {text}"]]),
        Code(f"acp-trace report {text}"),
    ]
    md, page = to_markdown(blocks), to_html(blocks, {}, title=text)
    for rendered in (md, page):
        assert not [c for c in rendered if unicodedata.category(c) in CONTROL and c not in KEPT]
    plain = shown.replace("\\", "\\\\").replace("]", "\\]")  # Markdown escapes these too
    assert f"p {plain}" in md and f"acp-trace report {shown}" in md
    assert f"<p>p {shown}</p>" in page and f"<title>{shown}</title>" in page
    assert f"acp-trace report {shown}</code></pre>" in page


def test_markdown_escaping_keeps_text_literal() -> None:
    """md_text turns markup characters into escapes or entities and newlines into spaces."""
    assert md_text("a|b`c*d_e[f]~g\\h") == "a\\|b\\`c\\*d\\_e\\[f\\]\\~g\\\\h"
    assert md_text("<b>&amp;</b>\nnext\r\nline") == "&lt;b&gt;&amp;amp;&lt;/b&gt; next line"
    assert md_text("# x ![i](u)") == "\\# x \\!\\[i\\](u)"


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("@octocat hi", "`@octocat` hi"),  # a mention
        (
            "@agentclientprotocol/claude-agent-acp 0.1",
            "`@agentclientprotocol/claude-agent-acp` 0.1",
        ),
        ("see https://evil.example/x?a=1.", "see `https://evil.example/x?a=1`."),
        ("www.evil.example", "`www.evil.example`"),
        ("mail me@evil.example", "mail `me@evil.example`"),
        ("fixes #12 and octo/repo#3", "fixes `#12` and `octo/repo#3`"),
        ("(@scope/agent 1.0)", "(`@scope/agent` 1.0)"),
        ("ftp://x.y mailto:a@b.c", "`ftp://x.y` `mailto:a@b.c`"),
        ("`a|b@c`", "`` `a|b@c` ``"),  # backticks inside: a longer fence, padded
        # near misses: nothing live, plain escaping
        ("example.com", "example.com"),
        ("C# and #x", "C\\# and \\#x"),
        ("1.5 ms", "1.5 ms"),
        ("- item", "\\- item"),
        ("2. step", "2\\. step"),
    ],
)
def test_markdown_turns_nothing_live(text: str, markdown: str) -> None:
    """Words GitHub would turn into a mention, a link, an e-mail or an issue reference
    become code spans (punctuation around them stays outside); other text is escaped; a
    line cannot start a list."""
    assert md_text(text) == markdown


def test_a_pipe_in_a_code_span_is_escaped_only_in_tables() -> None:
    """GitHub splits table cells at `|` even inside a code span, so there it is `\\|`."""
    assert md_text("a|b@c") == "`a|b@c`"
    assert md_text("a|b@c", table=True) == "`a\\|b@c`"


def outside_code(md: str) -> str:
    """The Markdown without its fenced blocks and code spans."""
    md = re.sub(r"(?ms)^(`{3,})sh\n.*?^\1$", "", md)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)


def test_report_makes_no_trace_text_live(tmp_path: Path) -> None:
    """An agent name that is a team mention, a version that is a www. link, a session id
    with a URL and an issue reference, a phase named by a URL: in report.md they are all
    inside code spans."""
    b = TraceBuilder(agent="@evil-org/team", version="www.evil.example")
    session = "s-https://evil.example/#12"
    rid = b.resume(session)
    b.history(session, 1)
    b.text("stderr", "[x] phase=https://evil.example/p durationMs=3")  # a phase named by a URL
    b.response(rid, dt=5)
    files = write_report(analyze(b.write(tmp_path / "x@y.jsonl")), tmp_path / "out")
    md = files.markdown.read_text()
    assert "`@evil-org/team`" in md and "`s-https://evil.example/#12`" in md
    assert "| `https://evil.example/p` " in md  # the largest phase in the gap
    assert "`x@y.jsonl`" in md
    plain = outside_code(md)
    for live in ("@", "://", "www.", "#12"):
        assert live not in plain, live


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


# The plain form of the scheme alternative of the live-word pattern (quadratic in a long word).
PLAIN_LIVE = re.compile(r"@|[a-z][a-z0-9+.-]*:/|(^|\W)www\.|(^|[\s\w/.-])#\d", re.IGNORECASE)


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("aZ1.-+:/ x@#w_"), max_size=20))
def test_the_linear_live_pattern_finds_what_the_plain_one_finds(text: str) -> None:
    """A word is live for the linear pattern exactly when it is for the plain one."""
    assert bool(document._LIVE.search(text)) == bool(PLAIN_LIVE.search(text))


def test_a_very_long_word_is_escaped_in_linear_time(tmp_path: Path) -> None:
    """A 300 KB session id (one word) goes into the Markdown at once, in a process whose
    timeout only guards against a hang."""
    # the plain pattern read the word again from every character: 108 s for 100 KB
    code = (
        "from acp_trace.render.report.document import md_text\n"
        "assert md_text('x' * 300_000 + ' 1a2b:/c') == 'x' * 300_000 + ' `1a2b:/c`'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_huge_id_is_cut_in_every_sentence_of_the_markdown(tmp_path: Path) -> None:
    """A 100 KB session id, agent name and request id are cut in the middle in report.md's
    sentences too (it stays under GitHub's limit) and kept whole in the HTML."""
    huge = "x" * 100_000
    b = TraceBuilder(agent="a" * 100_000)
    rid = b.resume(huge)
    b.history(huge, 1)
    b.marker(huge)
    b.state(huge)
    b.response(rid, dt=10)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    md = markdown_report(a)
    assert len(md) < MARKDOWN_LIMIT
    assert max(len(line) for line in md.splitlines()) < 2_000
    files = write_report(a, tmp_path / "out")
    assert huge in files.html.read_text()
