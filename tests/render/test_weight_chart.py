"""The weight chart (`plot --kind weight`) by content: its bands and their totals, the limits and
the lines over them, the moments marked, its size at many updates, and the picker it shares
with the replay chart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.collections import FillBetweenPolyCollection, PathCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from acp_trace import analyze, plots
from acp_trace.render.plots.weight_series import POINTS
from clirun import Cli, runner
from tracebuilder import TraceBuilder

BIG = 70_000  # a tool output over 64 KiB (65,536) and under 4 MB


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return runner(tmp_path, monkeypatch, capsys)


def heavy_trace(path: Path, updates: int = 40, title: str = "Run the tests") -> Path:
    """A resume whose history pauses 400 ms after its 10th update (a quiet-window client stops
    there), carries one tool_call_update over 64 KiB, then a marker and a late response."""
    b = TraceBuilder(agent="heavy-agent", version="3.1")
    rid = b.resume("s1")
    for i in range(updates):
        b.update("s1", "agent_message_chunk", dt=400.0 if i == 10 else 1.0,
                 content={"type": "text", "text": "word " * 10})  # fmt: skip
    b.update("s1", "tool_call", toolCallId="call-1", title=title, status="pending")
    b.update("s1", "tool_call_update", toolCallId="call-1", status="completed",
             content=[{"type": "content", "content": {"type": "text", "text": "x" * BIG}}])  # fmt: skip
    b.marker("s1")
    b.response(rid, dt=900.0)
    return b.write(path)


def gids(fig: Figure, prefix: str) -> list[str]:
    return [
        str(a.get_gid()) for a in fig.findobj(lambda a: str(a.get_gid() or "").startswith(prefix))
    ]


def one(fig: Figure, gid: str, kind: type[Artist]) -> Artist:
    found = [a for a in fig.findobj(lambda a: a.get_gid() == gid) if isinstance(a, kind)]
    assert len(found) == 1, (gid, found)
    return found[0]


def test_bands_are_the_history_by_kind_with_their_totals(tmp_path: Path) -> None:
    """A band per kind, largest first; the legend gives each kind's total, the same bytes as
    the replay row's bytes_by_kind; the stack ends at the row's history_bytes."""
    a = analyze(heavy_trace(tmp_path / "t.jsonl"))
    fig = plots.figure(a, "weight")
    row = a.replays.row(0, named=True)
    expected = [f"{d['kind']}: {d['bytes']:,} bytes" for d in row["bytes_by_kind"]]
    top = fig.axes[0]
    assert [t.get_text() for t in top.get_legend().get_texts()] == expected
    assert gids(fig, "band:") == [f"band:{d['kind']}" for d in row["bytes_by_kind"]]
    assert expected[0].startswith("tool_call_update: ")
    last = one(fig, f"band:{row['bytes_by_kind'][-1]['kind']}", FillBetweenPolyCollection)
    assert (
        max(p[:, 1].max() for p in last.get_paths() for p in [p.vertices]) == row["history_bytes"]
    )
    assert (
        "heavy-agent 3.1" in top.get_title()
        and f"{row['history_bytes']:,} history bytes" in top.get_title()
    )


def test_the_line_over_a_limit_is_named_and_the_largest_starred(tmp_path: Path) -> None:
    """The 64 KiB limit and the next one above the largest line are drawn; the one line over
    64 KiB is the red point, named `over 64 KiB` at its time; the largest line is starred and
    the panel says its kind, tool, bytes and the limit it passes."""
    a = analyze(heavy_trace(tmp_path / "t.jsonl"))
    fig = plots.figure(a, "weight")
    row = a.replays.row(0, named=True)
    assert gids(fig, "limit:") == ["limit:64 KiB", "limit:4 MB"]
    over = one(fig, "over", PathCollection)
    assert len(over.get_offsets()) == 1 and over.get_offsets()[0][1] == row["largest_update_bytes"]
    label = one(fig, "over-label", Text)
    assert label.get_text() == "over 64 KiB"
    star = one(fig, "largest-line", PathCollection)
    assert tuple(star.get_offsets()[0]) == tuple(over.get_offsets()[0])
    heading = fig.axes[1].get_title()
    size = f"{row['largest_update_bytes']:,}"
    assert (
        f'largest line: tool_call_update "Run the tests", {size} bytes, over the 64 KiB limit'
        in heading
    )
    assert "1 line over a limit" in heading


def test_the_replay_end_the_quiet_window_end_and_the_response_are_marked(tmp_path: Path) -> None:
    """A vertical line on both panels for each, and a label with its time: the quiet-window
    end says how many history updates came after it; the note says what such a client does."""
    a = analyze(heavy_trace(tmp_path / "t.jsonl"))
    row = a.replays.row(0, named=True)
    fig = plots.figure(a, "weight")
    for name in ("replay-end", "quiet-end", "response"):
        assert len([x for x in fig.findobj(Line2D) if x.get_gid() == name]) == 2, name
    labels = {
        str(t.get_gid()): t.get_text()
        for t in fig.findobj(Text)
        if str(t.get_gid()).endswith("-label")
    }
    after = row["updates_after_quiet_end"]
    assert after == 32  # the 30 updates from the 400 ms pause on, the tool call and its update
    assert (
        labels["quiet-end-label"] == f"quiet-window end {row['quiet_end_ms']:.0f} ms: {after} after"
    )
    assert labels["replay-end-label"].startswith("replay_complete marker ")
    assert labels["response-label"] == f"response {row['response_ms']:,.0f} ms"
    note = one(fig, "note", Text).get_text()
    assert "250 ms with no update" in note and f"taken the {after} history updates after it" in note


def test_children_are_a_band_of_their_own(tmp_path: Path) -> None:
    """The covered children's history is one band, after the resumed session's kinds."""
    b = TraceBuilder()
    rid = b.resume("parent")
    b.history("parent", 2)
    for child in ("kid1", "kid2"):
        b.update("parent", "subagent_update", sessionId=child)
        b.history(child, 1)
        b.marker(child)
    b.marker("parent")
    b.response(rid, dt=50)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    fig = plots.figure(a, "weight", session="parent")
    assert gids(fig, "band:")[-1] == "band:covered children"
    children = a.replays.filter(a.replays["session"] == "parent")["children_bytes"][0]
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts[-1] == f"covered children: {children:,} bytes" and children > 0


def test_a_replay_of_many_updates_is_drawn_with_bounded_artists(tmp_path: Path) -> None:
    """20,000 updates: each band and the line lengths hold at most POINTS (+2) points; the
    totals stay exact, and the panel says the lengths are the longest per time bin."""
    a = analyze(heavy_trace(tmp_path / "t.jsonl", updates=20_000))
    fig = plots.figure(a, "weight")
    for band in fig.findobj(FillBetweenPolyCollection):
        assert sum(len(p.vertices) for p in band.get_paths()) <= 4 * (POINTS + 2) + 8
    lines = one(fig, "lines", PathCollection)
    assert len(lines.get_offsets()) <= POINTS
    assert "the longest per time bin" in fig.axes[1].get_title()
    row = a.replays.row(0, named=True)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == [f"{d['kind']}: {d['bytes']:,} bytes" for d in row["bytes_by_kind"]]
    # the longest line survives the thinning
    assert np.max(lines.get_offsets()[:, 1]) == row["largest_update_bytes"]


def test_the_weight_chart_draws_the_replay_the_replay_chart_draws(tmp_path: Path) -> None:
    """The same picker: the slowest replay, or the one --session names, in the title."""
    b = TraceBuilder()
    for session, late in (("fast", 5.0), ("slow", 500.0)):
        rid = b.resume(session)
        b.history(session, 2)
        b.marker(session)
        b.response(rid, dt=late)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    for session in (None, "fast"):
        weight = plots.figure(a, "weight", session=session)._suptitle.get_text()
        replay = plots.figure(a, "replay", session=session)._suptitle.get_text()
        assert weight.split(": ", 1)[1] == replay.split(": ", 1)[1]
    assert "of slow " in plots.figure(a, "weight")._suptitle.get_text()


def test_a_hostile_tool_title_is_a_safe_label(tmp_path: Path) -> None:
    """A title with mathtext, controls and 300 characters: cut and shown literally."""
    title = "$x^2$ \x1b[31m" + "t" * 300
    a = analyze(heavy_trace(tmp_path / "t.jsonl", title=title))
    heading = plots.figure(a, "weight").axes[1].get_title()
    assert r"\$x^2\$" in heading and "\x1b" not in heading and len(heading) < 300


def test_plot_kind_weight_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    """`plot --kind weight --session ID -o FILE` writes the chart; an unknown session is a
    usage error listing the choices."""
    heavy_trace(tmp_path / "t.jsonl")
    done = cli("plot", "t.jsonl", "--kind", "weight", "--session", "s1", "-o", "w.png")
    assert done.code == 0 and (tmp_path / "w.png").stat().st_size > 10_000
    wrong = cli("plot", "t.jsonl", "--kind", "weight", "--session", "nope", "-o", "x.png")
    assert wrong.code == 2 and "--session nope: no such session; expected one of: s1" in wrong.err


def test_a_window_with_no_agent_line_and_time_going_back_are_drawn(tmp_path: Path) -> None:
    """A resume the agent never answered: empty panels that say so, whole-number ticks; a
    replay whose times go back: the curves never fall (no warning either way)."""
    b = TraceBuilder()
    b.resume("s1")
    fig = plots.figure(analyze(b.write(tmp_path / "none.jsonl")), "weight")
    assert one(fig, "no-history", Text).get_text() == "no history update in this replay"
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert len(ticks) == len(set(ticks))  # no "0, 0, 0" from fractional ticks
    b = TraceBuilder()
    rid = b.resume("s1")
    for i in range(30):
        b.update("s1", "agent_message_chunk", dt=-5.0 if i % 7 == 3 else 1.0,
                 content={"type": "text", "text": "x"})  # fmt: skip
    b.response(rid)
    fig = plots.figure(analyze(b.write(tmp_path / "back.jsonl")), "weight")
    (band,) = fig.findobj(FillBetweenPolyCollection)
    edge = np.concatenate([p.vertices for p in band.get_paths()])
    top = edge[edge[:, 1] > 0]  # the band's upper edge (its lower one is 0)
    top = top[np.lexsort((top[:, 1], top[:, 0]))]  # by time, then height
    assert len(top) > 5 and np.all(np.diff(top[:, 1]) >= 0)
