"""Charts are tested by content (titles, labels, artists, annotations), never by pixels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

import numpy as np
import orjson
import polars as pl
import pytest
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from typer.testing import CliRunner

from acp_trace import analyze, plots
from acp_trace.cli import app
from acp_trace.errors import UsageError
from acp_trace.render.plots.gap import percentiles
from tracebuilder import TraceBuilder

SECRET = "SECRET-PROMPT-TEXT"
A = TypeVar("A", bound=Artist)


def replay(
    b: TraceBuilder, session: str, gap: float, *, marker: bool = True, turns: int = 2
) -> None:
    """A v2 replaying resume of `session` whose marker (or last history update) comes `gap` ms
    before the response."""
    rid = b.resume(session)
    b.history(session, turns)
    if marker:
        b.marker(session)
    b.response(rid, dt=gap)


def gap_trace(path: Path, gaps: list[float], agent: str = "agent-a", marker: bool = True) -> Path:
    b = TraceBuilder(agent=agent, version="1.0")
    for i, gap in enumerate(gaps):
        replay(b, f"s{i}", gap, marker=marker)
    return b.write(path)


def v1_trace(path: Path, gaps: list[float]) -> Path:
    """v1 loads: no marker, so the gap falls back to the last history update."""
    b = TraceBuilder(protocol=1, agent="agent-v1", version="0.1")
    for i, gap in enumerate(gaps):
        rid = b.load(f"v{i}")
        b.history(f"v{i}", 2)
        b.response(rid, dt=gap)
    return b.write(path)


def child_trace(path: Path) -> Path:
    """One resume with two announced children, all marked; plus a faster second resume."""
    b = TraceBuilder(agent="kids", version="2.0")
    rid = b.resume("parent")
    b.history("parent", 2)
    for child in ("kid1", "kid2"):
        b.update("parent", "subagent_update", sessionId=child)
        b.history(child, 1)
        b.marker(child)
    b.marker("parent")
    b.update("parent", "available_commands_update", availableCommands=[])
    b.state("parent")
    b.response(rid, dt=700)
    replay(b, "quick", 5)
    return b.write(path)


def ordering_only(b: TraceBuilder, path: Path) -> Path:
    """Write a trace without timestamps (as an ordering-only import would)."""
    lines = [b.lines[0]]
    for line in b.lines[1:]:
        rec = orjson.loads(line)
        rec.pop("t_ns", None)
        lines.append(orjson.dumps(rec))
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


def texts(fig: Figure) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def by_gid(where: Artist, gid: str, kind: type[A]) -> list[A]:
    """The artists of a figure (or of one axes) with this gid."""
    return [a for a in where.findobj(lambda a: a.get_gid() == gid) if isinstance(a, kind)]


def number(text: str) -> float:
    match = re.search(r"(-?\d+(?:\.\d+)?) ms", text)
    assert match, text
    return float(match.group(1))


def axes_of(fig: Figure) -> list[Axes]:
    """The axes that draw data (not the ones that only hold a legend or a message)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def legend_texts(fig: Figure) -> list[str]:
    legends = by_gid(fig, "gap-legend", Legend)
    assert len(legends) == 1
    return [t.get_text() for t in legends[0].get_texts()]


# ---------------------------------------------------------------- gap


def test_gap_percentile_lines_and_labels_match_the_data(tmp_path: Path) -> None:
    """p50, p90 and p99 lines sit at the quantiles of the gaps, and their labels show them."""
    gaps = [40.0, 55.0, 60.0, 90.0, 120.0, 130.0, 300.0, 310.0, 900.0, 1500.0]
    a = analyze(gap_trace(tmp_path / "t.jsonl", gaps))
    expected = a.replays.select(
        pl.col("marker_to_response_ms").quantile(q / 100, "linear").alias(str(q))
        for q in (50, 90, 99)
    ).row(0)
    fig = plots.gap(a)
    for q, value in zip((50, 90, 99), expected, strict=True):
        lines = by_gid(fig, f"p{q}", Line2D)
        assert len(lines) == 2  # on the histogram and on the ECDF
        assert all(line.get_xdata()[0] == pytest.approx(value) for line in lines)
        labels = by_gid(fig, f"p{q}-label", Text)
        assert len(labels) == 2
        for label in labels:
            assert label.get_text().startswith(f"p{q} ")
            assert number(label.get_text()) == pytest.approx(value, abs=0.51)


def test_gap_has_titles_units_and_one_histogram_and_ecdf_per_group(tmp_path: Path) -> None:
    """Two agents give two series, each with one histogram patch and one ECDF line, on two
    titled axes with units in the x labels."""
    gap_trace(tmp_path / "a.jsonl", [100, 200, 300], agent="agent-a")
    gap_trace(tmp_path / "b.jsonl", [150, 250], agent="agent-b")
    fig = plots.gap(analyze(tmp_path))
    hist_ax, ecdf_ax = axes_of(fig)
    assert hist_ax.get_title() == "Histogram"
    assert "ECDF" in ecdf_ax.get_title()
    assert hist_ax.get_xlabel() == ecdf_ax.get_xlabel() == "gap (ms)"
    assert fig.get_suptitle().startswith("Replay gap")
    for agent, n in (("agent-a 1.0", 3), ("agent-b 1.0", 2)):
        name = f"{agent} · marker (n={n})"
        assert len(by_gid(fig, f"hist:{name}", Patch)) == 1
        assert len(by_gid(fig, f"ecdf:{name}", Line2D)) == 1
    assert legend_texts(fig) == ["agent-a 1.0 · marker (n=3)", "agent-b 1.0 · marker (n=2)"]


def test_gap_falls_back_to_last_history_and_says_so(tmp_path: Path) -> None:
    """Replays without a marker use last_history_to_response_ms, labelled "no marker: last history"."""
    a = analyze(v1_trace(tmp_path / "v1.jsonl", [80, 120]))
    fig = plots.gap(a)
    assert legend_texts(fig) == ["agent-v1 0.1 · no marker: last history (n=2)"]
    p50 = by_gid(fig, "p50", Line2D)[0]
    expected = a.replays["last_history_to_response_ms"].median()
    assert p50.get_xdata()[0] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("gaps", "scale"),
    [
        ([2.0, 5.0, 900.0], "log"),
        ([100.0, 200.0, 9000.0], "linear"),
        ([3.0, 250.0, 301.0], "log"),
        ([0.0, 3.0, 301.0], "symlog"),
        ([0.0, 3.0, 30.0], "linear"),
    ],
)
def test_gap_axis_is_logarithmic_when_values_span_decades(
    tmp_path: Path, gaps: list[float], scale: str
) -> None:
    """The x axes go logarithmic exactly when max/min of the positive gaps exceeds 100
    (symmetric-log, linear near zero, when some gaps are 0 ms, so none is hidden)."""
    # The marker comes 1 ms after the last history update: gap = response dt.
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", gaps)))
    assert [ax.get_xscale() for ax in axes_of(fig)] == [scale, scale]


def test_gap_without_replays_says_so(tmp_path: Path) -> None:
    """With no replay the gap figure is a clear message, not a crash."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/"})
    fig = plots.gap(analyze(b.write(tmp_path / "t.jsonl")))
    assert any("No replay gaps" in t for t in texts(fig))


def test_ordering_only_traces_are_left_out_with_a_note(tmp_path: Path) -> None:
    """A trace without timestamps is left out of every chart, and each says so in a note."""
    gap_trace(tmp_path / "timed.jsonl", [100, 200])
    b = TraceBuilder(agent="untimed-agent")
    replay(b, "u1", 50)
    ordering_only(b, tmp_path / "untimed.jsonl")
    a = analyze(tmp_path)
    gap_fig = plots.gap(a)
    assert legend_texts(gap_fig) == ["agent-a 1.0 · marker (n=2)"]
    for fig in (gap_fig, plots.replay(a), plots.latency(a)):
        notes = [t.get_text() for t in by_gid(fig, "note", Text)]
        assert any("1 ordering-only trace(s) left out" in n for n in notes)


def test_only_ordering_only_traces_give_an_empty_figure(tmp_path: Path) -> None:
    """When every trace lacks timestamps, the figures say there is nothing to draw."""
    b = TraceBuilder()
    replay(b, "u1", 50)
    a = analyze(ordering_only(b, tmp_path / "untimed.jsonl"))
    for fig in (plots.gap(a), plots.replay(a), plots.latency(a)):
        assert by_gid(fig, "empty", Text)
        assert by_gid(fig, "note", Text)


# ---------------------------------------------------------------- replay


def test_replay_has_one_lane_per_session_and_the_gap_of_each(tmp_path: Path) -> None:
    """The slowest replay is drawn with a lane per session (children below the parent) and
    each lane's annotated gap equals its marker_to_response_ms."""
    a = analyze(child_trace(tmp_path / "t.jsonl"))
    fig = plots.replay(a)
    ax = axes_of(fig)[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "parent\n(6 history)",
        "kid1\n(2 history, child of parent)",
        "kid2\n(2 history, child of parent)",
    ]
    assert len(axes_of(fig)) == 2  # the whole window and a zoom on the updates
    for session in ("parent", "kid1", "kid2"):
        assert len(by_gid(ax, f"lane:{session}", Line2D)) == 1
        row = a.replays.filter(pl.col("session") == session)
        gap = by_gid(fig, f"gap:{session}", Text)[0]
        assert gap.get_text().startswith("gap ")
        assert number(gap.get_text()) == pytest.approx(row["marker_to_response_ms"][0], abs=0.51)
    assert by_gid(fig, "lane:quick", Line2D) == []


def test_replay_draws_every_history_update_the_marker_and_live_updates(tmp_path: Path) -> None:
    """Each history update is a tick on its lane; the marker, live updates and the state_update
    snapshot have their own artists; request and response are vertical lines."""
    a = analyze(child_trace(tmp_path / "t.jsonl"))
    fig = plots.replay(a)
    overview = axes_of(fig)[0]

    def count(gid: str) -> int:
        found = by_gid(overview, gid, PathCollection)
        return sum(len(c.get_offsets()) for c in found)

    # parent: 4 history messages + 2 subagent announcements; each child: 2 messages
    assert count("history:parent") == 6
    assert count("history:kid1") == count("history:kid2") == 2
    assert count("marker:parent") == count("marker:kid1") == 1
    assert count("live:parent") == 1
    assert count("state:parent") == 1
    assert (
        len(by_gid(overview, "request", Line2D)) == len(by_gid(overview, "response", Line2D)) == 1
    )
    labels = [t.get_text() for t in axes_of(fig)[0].get_legend().get_texts()]
    assert "replay_complete marker" in labels and "history update" in labels


def test_replay_can_be_chosen_by_session_or_request(tmp_path: Path) -> None:
    """--session and --request pick a replay; without them the slowest is drawn."""
    a = analyze(child_trace(tmp_path / "t.jsonl"))
    assert "of parent" in plots.replay(a).get_suptitle()
    assert "of quick" in plots.replay(a, session="quick").get_suptitle()
    quick_id = a.replays.filter(pl.col("session") == "quick")["request_id"][0]
    assert "of quick" in plots.replay(a, request=quick_id).get_suptitle()
    assert "of parent" in plots.replay(a, session="kid2").get_suptitle()
    missing = plots.replay(a, session="nope")
    assert any("No replay to show for session nope" in t for t in texts(missing))


def test_replay_can_be_chosen_by_trace_when_session_ids_repeat(tmp_path: Path) -> None:
    """Two traces that resume the same session id: --trace picks the file, by path or name."""
    gap_trace(tmp_path / "slow.jsonl", [900.0], agent="slow-agent")
    gap_trace(tmp_path / "fast.jsonl", [20.0], agent="fast-agent")
    a = analyze(tmp_path)
    assert "slow-agent" in axes_of(plots.replay(a, session="s0"))[0].get_title()
    fig = plots.replay(a, session="s0", trace="fast.jsonl")
    assert "fast-agent" in axes_of(fig)[0].get_title()
    fig = plots.replay(a, trace=str(tmp_path / "fast.jsonl"))
    assert "fast-agent" in axes_of(fig)[0].get_title()
    notes = [t.get_text() for t in by_gid(plots.replay(a, session="s0"), "note", Text)]
    assert notes == [
        "The slowest of 2 replays for session s0; choose another with --trace, --session or --request."
    ]


def test_replay_without_marker_annotates_the_last_history_gap(tmp_path: Path) -> None:
    """An unmarked replay's lane shows "no marker: last history → response" with that gap."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", [333.0], marker=False))
    fig = plots.replay(a)
    gap = by_gid(fig, "gap:s0", Text)[0].get_text()
    assert gap.startswith("no marker: last history → response")
    assert number(gap) == pytest.approx(a.replays["last_history_to_response_ms"][0], abs=0.51)


def test_replay_zooms_on_a_short_history_before_a_long_gap(tmp_path: Path) -> None:
    """When the updates fill under a quarter of the window a second, zoomed panel shows them."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", [5000.0]))
    fig = plots.replay(a)
    overview, zoom = axes_of(fig)
    assert zoom.get_title().startswith("Zoom on the updates")
    assert zoom.get_xlim()[1] < overview.get_xlim()[1] / 4
    assert [t.get_text() for t in zoom.get_yticklabels()] == ["s0\n(4 history)"]


# ---------------------------------------------------------------- latency


def test_latency_has_a_box_and_a_strip_per_method_and_turn_phases(tmp_path: Path) -> None:
    """One box and one dot per answered request for each method; prompt phases on the right."""
    b = TraceBuilder()
    for i in range(3):
        replay(b, f"s{i}", 100 + i)
        p = b.request("session/prompt", {"sessionId": f"s{i}", "prompt": []})
        b.response(p, dt=2)
        b.update(f"s{i}", "agent_message_chunk", dt=40, content={"type": "text", "text": "x"})
        b.state(f"s{i}", stopReason="end_turn", dt=300)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    fig = plots.latency(a)
    req_ax, turn_ax = axes_of(fig)
    assert req_ax.get_xlabel() == "request → response (ms)"
    assert turn_ax.get_xlabel() == "ms after the prompt request"
    counts = dict(a.latency("method").select("method", "count").iter_rows())
    for method, n in counts.items():
        assert len(by_gid(fig, f"box:method:{method}", Patch)) == 1
        dots = by_gid(fig, f"strip:method:{method}", PathCollection)
        assert len(dots[0].get_offsets()) == n
    ticks = [t.get_text() for t in req_ax.get_yticklabels()]
    assert "session/resume (n=3)" in ticks
    for phase in ("first agent chunk", "end of turn"):
        dots = by_gid(fig, f"strip:phase:{phase}", PathCollection)
        assert len(dots[0].get_offsets()) == 3
    assert by_gid(fig, "strip:phase:prompt accepted", PathCollection) == []


def test_latency_without_prompt_turns_says_so(tmp_path: Path) -> None:
    """Without prompt turns the request panel takes the whole width and a note says why."""
    fig = plots.latency(analyze(gap_trace(tmp_path / "t.jsonl", [10.0])))
    assert len(axes_of(fig)) == 1
    notes = [t.get_text() for t in by_gid(fig, "note", Text)]
    assert notes == ["No prompt turns with timestamps: no turn phases to show."]


def test_every_chart_of_an_empty_input_is_a_message(tmp_path: Path) -> None:
    """No traces at all: each chart says there is nothing to draw."""
    a = analyze(pl.DataFrame(schema=analyze(gap_trace(tmp_path / "t.jsonl", [1])).records.schema))
    for kind in plots.KINDS:
        assert by_gid(plots.figure(a, kind), "empty", Text), kind


# ---------------------------------------------------------------- all charts


def hostile_trace(path: Path) -> Path:
    b = TraceBuilder(agent="_$x$ agent", version="1.0")
    session = "sess$1\u5b57\U0001f642"  # a CJK character and an emoji the font lacks
    rid = b.resume(session)
    b.update(session, "user_message", messageId="m1", content={"type": "text", "text": SECRET})
    b.update(session, "agent_message", messageId="m2", content={"type": "text", "text": SECRET})
    b.marker(session)
    b.response(rid, dt=50)
    return b.write(path)


@pytest.mark.parametrize("kind", plots.KINDS)
def test_charts_are_legible_and_show_no_message_text(tmp_path: Path, kind: str) -> None:
    """Each chart is 1200x675 px, uses fonts of 10 pt or more, keeps `$` and leading `_` of
    trace names literal, replaces glyphs the font lacks, and never shows message contents (also
    not in SVG output)."""
    fig = plots.figure(analyze(hostile_trace(tmp_path / "t.jsonl")), kind)
    assert tuple(fig.get_size_inches() * fig.dpi) == (1200, 675)
    shown = texts(fig)
    assert all(SECRET not in t for t in shown)
    small = [t.get_text() for t in fig.findobj(Text) if t.get_text() and t.get_fontsize() < 10]
    assert small == []
    if kind == "gap":  # the legend keeps a name that starts with `_` and shows `$` as is
        assert legend_texts(fig)[0].startswith(" _\\$x\\$ agent")
    if kind == "replay":
        assert any("sess\\$1??" in t for t in shown)  # missing glyphs drawn as `?`, no warning
    svg = plots.save(fig, tmp_path / f"{kind}.svg").read_text()
    assert SECRET not in svg


def test_save_writes_png_and_svg_and_refuses_other_suffixes(tmp_path: Path) -> None:
    """save writes a 1200 px wide PNG or an SVG; any other suffix is a usage error."""
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", [10, 20])))
    (tmp_path / "out").mkdir()  # save never creates directories (acp_trace.files)
    png = plots.save(fig, tmp_path / "out" / "gap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1200
    assert plots.save(fig, tmp_path / "gap.svg").read_text().startswith("<?xml")
    with pytest.raises(UsageError, match=r"must end in \.png or \.svg"):
        plots.save(fig, tmp_path / "gap.jpg")
    with pytest.raises(UsageError, match="--kind"):
        plots.plot([tmp_path / "t.jsonl"], tmp_path / "x.png", "pie")


def test_percentiles_helper_uses_linear_interpolation() -> None:
    """The chart's percentiles are numpy's linear ones, which polars' "linear" quantile equals."""
    values = np.array([1.0, 2.0, 3.0, 10.0])
    assert percentiles(values) == {
        q: pytest.approx(pl.Series(values).quantile(q / 100, "linear")) for q in (50, 90, 99)
    }


def test_cli_plot_writes_the_chosen_chart(tmp_path: Path) -> None:
    """`acp-trace plot TRACE -o FILE --kind replay --session S` writes the file and says where."""
    trace = child_trace(tmp_path / "t.jsonl")
    out = tmp_path / "replay.png"
    args = ["plot", str(trace), "-o", str(out), "--kind", "replay", "--session", "quick"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out}\n"
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_labels_from_traces_are_safe_and_keep_both_ends() -> None:
    """label() shortens long ids in the middle, escapes `$`, shields a leading `_` and turns
    unprintable characters into `?`."""
    from acp_trace.render.plots._common import label

    long_id = "0198c0de-0000-7000-8000-000000000200"
    assert label(long_id, 24) == "0198c0de-00…000000000200"
    assert len(label(long_id, 24)) == 24
    assert label("$a$") == r"\$a\$"
    assert label("_x") == " _x"
    assert label("a\nb\x00") == "a?b?"
    assert label(None) == "unknown"
