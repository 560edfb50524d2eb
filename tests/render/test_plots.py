"""Charts are tested by content (titles, labels, artists, annotations), never by pixels."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TypeVar

import numpy as np
import orjson
import polars as pl
import pytest
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, StepPatch
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from numpy.typing import NDArray
from typer.testing import CliRunner

from acp_trace import analyze, plots
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.cli import app, main
from acp_trace.errors import OutputError, UsageError
from acp_trace.render.plots import Pick, choose_window
from acp_trace.render.plots.gap import percentiles
from testpaths import SAMPLES
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
    match = re.search(r"(-?[\d,]+(?:\.\d+)?) ms", text)
    assert match, text
    return float(match.group(1).replace(",", ""))


def axes_of(fig: Figure) -> list[Axes]:
    """The axes that draw data (not the ones that only hold a legend or a message)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


# ---------------------------------------------------------------- gap

PLAIN_TICK = re.compile(r"^(0|-?\d{1,3}(,\d{3})*(\.\d+)?|-?0\.\d+)$")


def lanes(fig: Figure) -> list[str]:
    """The lane names of the gap chart, top to bottom."""
    (ax,) = axes_of(fig)
    return [t.get_text() for t in ax.get_yticklabels()]


def tick_texts(ax: Axes) -> list[str]:
    ax.get_figure(root=True).canvas.draw()
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]


def gid_prefix(fig: Figure, prefix: str) -> list[Artist]:
    return fig.findobj(lambda a: str(a.get_gid() or "").startswith(prefix))


def label_boxes(fig: Figure) -> dict[str, list[tuple[str, Bbox]]]:
    """Per lane, the row labels (values, percentiles, max) with their boxes in pixels."""
    fig.canvas.draw()
    out: dict[str, list[tuple[str, Bbox]]] = {}
    for prefix in ("value:", "p50-label:", "p90-label:", "p99-label:", "max-label:"):
        for t in gid_prefix(fig, prefix):
            assert isinstance(t, Text)
            lane = str(t.get_gid()).split(":", 1)[1]
            box = Text.get_window_extent(t)  # the text alone, without its leader line
            out.setdefault(lane, []).append((t.get_text(), box))
    return out


def assert_labels_apart(fig: Figure) -> None:
    """No two labels of a lane overlap, and every label is inside the axes."""
    (ax,) = axes_of(fig)
    frame = ax.get_window_extent()
    for lane, boxes in label_boxes(fig).items():
        for i, (text, box) in enumerate(boxes):
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1, (lane, text)
            for other, box2 in boxes[i + 1 :]:
                assert not box.overlaps(box2), (lane, text, other)


def many_gaps(n: int, median: float, seed: int = 0) -> list[float]:
    return list(np.random.default_rng(seed).lognormal(np.log(median), 0.4, n))


def test_gap_of_one_replay_is_one_labelled_value_on_a_plain_ms_axis(tmp_path: Path) -> None:
    """One replay: a linear axis from 0 past the value with plain tick labels (no offset like
    `+1.36e3`), one dot on a stem from 0, one label with the value, no percentile marks."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", [1359.45], marker=False))
    fig = plots.gap(a)
    (ax,) = axes_of(fig)
    value = a.replays["last_history_to_response_ms"][0]
    assert ax.get_xscale() == "linear"
    low, high = ax.get_xlim()
    assert low <= 0 < value < high < 2 * value
    ticks = tick_texts(ax)
    assert ticks and all(PLAIN_TICK.match(t) for t in ticks), ticks
    assert "1,200" in ticks
    assert ax.xaxis.get_offset_text().get_text() == ""
    assert lanes(fig) == ["agent-a 1.0 · 1 replay\nlast history update (no marker) → response"]
    values = [t for t in gid_prefix(fig, "value:") if isinstance(t, Text)]
    assert [t.get_text() for t in values] == [plots_ms(value)]
    assert gid_prefix(fig, "p50") == [] and gid_prefix(fig, "max-label") == []
    (dots,) = [d for d in gid_prefix(fig, "dots:") if isinstance(d, PathCollection)]
    assert dots.get_offsets()[0][0] == pytest.approx(value)
    assert len(by_gid(fig, "stem", Line2D)) == 1
    assert "1 replay with a gap · 1 agent version" in fig.get_suptitle()


def plots_ms(value: float) -> str:
    from acp_trace.quantities import duration

    return duration(value)


def test_gap_of_two_close_replays_labels_both_apart(tmp_path: Path) -> None:
    """Two replays 2 ms apart: two dots, two value labels that do not overlap, no marks."""
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", [1359.0, 1361.0])))
    (dots,) = [d for d in gid_prefix(fig, "dots:") if isinstance(d, PathCollection)]
    assert len(dots.get_offsets()) == 2
    texts_ = [t for t, _ in label_boxes(fig)["agent-a 1.0 · replay_complete marker → response"]]
    assert texts_ == ["1,359 ms", "1,361 ms"]
    assert_labels_apart(fig)
    assert gid_prefix(fig, "p50") == []


def test_gap_of_thirty_replays_is_dots_with_p50_p90_and_max(tmp_path: Path) -> None:
    """30 replays: every replay a dot, p50 and p90 marked at the lane's quantiles with
    labels that show them, the max labelled; no p99 (too few replays for it)."""
    gaps = many_gaps(30, 800.0)
    a = analyze(gap_trace(tmp_path / "t.jsonl", gaps))
    fig = plots.gap(a)
    lane = "agent-a 1.0 · replay_complete marker → response"
    (dots,) = by_gid(fig, f"dots:{lane}", PathCollection)
    assert len(dots.get_offsets()) == 30
    values = a.replays["marker_to_response_ms"]
    for q in (50, 90):
        (line,) = by_gid(fig, f"p{q}:{lane}", Line2D)
        assert line.get_xdata()[0] == pytest.approx(values.quantile(q / 100, "linear"))
        (text,) = by_gid(fig, f"p{q}-label:{lane}", Text)
        assert text.get_text().startswith(f"p{q} ")
        assert number(text.get_text()) == pytest.approx(line.get_xdata()[0], abs=0.51)
    assert by_gid(fig, f"p99:{lane}", Line2D) == []
    (top,) = by_gid(fig, f"max-label:{lane}", Text)
    assert number(top.get_text()) == pytest.approx(values.max(), abs=0.51)
    assert_labels_apart(fig)


def test_gap_of_a_thousand_replays_is_a_histogram_of_equal_narrow_bins(tmp_path: Path) -> None:
    """1,000 replays: a histogram (no dots) whose bins are equal slices of the axis, none
    near a third of it, and p50, p90, p99 marked at the lane's quantiles."""
    gaps = many_gaps(1000, 900.0)
    a = analyze(gap_trace(tmp_path / "t.jsonl", gaps))
    fig = plots.gap(a)
    (ax,) = axes_of(fig)
    lane = "agent-a 1.0 · replay_complete marker → response"
    (hist,) = by_gid(fig, f"hist:{lane}", StepPatch)
    edges = ax.xaxis.get_transform().transform(hist.get_data().edges)
    low, high = ax.xaxis.get_transform().transform(np.array(ax.get_xlim()))
    widths = np.diff(edges) / (high - low)
    assert widths.max() < 1 / 30 and widths.max() == pytest.approx(widths.min())
    assert int(sum(hist.get_data().values > hist.get_data().baseline)) > 10
    assert gid_prefix(fig, "dots:") == []
    values = a.replays["marker_to_response_ms"]
    for q in (50, 90, 99):
        (line,) = by_gid(fig, f"p{q}:{lane}", Line2D)
        assert line.get_xdata()[0] == pytest.approx(values.quantile(q / 100, "linear"))
    assert "1,000 replays" in fig.get_suptitle()
    assert lanes(fig) == ["agent-a 1.0 · 1,000 replays\nreplay_complete marker → response"]
    assert_labels_apart(fig)


def four_decades(tmp_path: Path, n: int) -> Path:
    gap_trace(tmp_path / "slow.jsonl", many_gaps(n, 5000.0, 1), agent="slow-agent")
    gap_trace(tmp_path / "fast.jsonl", many_gaps(n, 0.5, 2), agent="fast-agent")
    gap_trace(tmp_path / "mid.jsonl", many_gaps(n, 50.0, 3), agent="mid-agent")
    return tmp_path


@pytest.mark.parametrize("n", [2, 30, 400])
def test_gap_agents_four_decades_apart_get_a_lane_each_on_a_log_axis(
    tmp_path: Path, n: int
) -> None:
    """Agents whose gaps differ by four decades: one lane each (by name), on one log axis with
    plain tick labels; each lane's marks are its own percentiles, never the pooled ones; each
    lane one colour and inside its own band, so nothing overlaps or blends."""
    a = analyze(four_decades(tmp_path, n))
    fig = plots.gap(a)
    (ax,) = axes_of(fig)
    assert ax.get_xscale() == "log"
    assert {"1", "10", "100", "1,000"} <= set(tick_texts(ax))
    names = ["fast-agent 1.0", "mid-agent 1.0", "slow-agent 1.0"]
    assert [lane.split("\n")[0].split(" · ")[0] for lane in lanes(fig)] == names
    colours = set()
    for index, agent in enumerate(names):
        lane = f"{agent} · replay_complete marker → response"
        data = gid_prefix(fig, f"dots:{lane}") + gid_prefix(fig, f"hist:{lane}")
        assert len(data) == 1
        colours.add(to_hex(data[0].get_facecolor() if n > 100 else data[0].get_facecolors()[0]))
        ys = np.asarray(data[0].get_offsets())[:, 1] if n <= 100 else hist_ys(data[0])
        assert -index - 0.5 < ys.min() and ys.max() < -index + 0.5
        mine = a.replays.filter(pl.col("agent") == agent.split()[0])["marker_to_response_ms"]
        for q in (50, 90, 99):
            lines = by_gid(fig, f"p{q}:{lane}", Line2D)
            assert len(lines) == (1 if n >= {50: 4, 90: 10, 99: 100}[q] else 0)
            for line in lines:
                assert line.get_xdata()[0] == pytest.approx(mine.quantile(q / 100, "linear"))
    assert len(colours) == 3
    assert_labels_apart(fig)


def hist_ys(step: Artist) -> NDArray[np.float64]:
    assert isinstance(step, StepPatch)
    data = step.get_data()
    return np.array([data.baseline, *data.values])


@pytest.mark.parametrize(
    ("gaps", "labels"),
    [
        ([500.0] * 30, ["p50, p90, max 500 ms"]),  # all the same: one label, not three on top
        ([500.0] * 29 + [900.0], ["p50, p90 500 ms", "max 900 ms"]),
        ([float(v) for v in range(100, 130)], ["p50 114 ms", "p90 126 ms", "max 129 ms"]),
    ],
)
def test_gap_labels_that_read_the_same_are_one(
    tmp_path: Path, gaps: list[float], labels: list[str]
) -> None:
    """Percentiles and max that read the same share one label; close ones sit side by side,
    apart, each marked at its value."""
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", gaps)))
    boxes = label_boxes(fig)["agent-a 1.0 · replay_complete marker → response"]
    assert sorted(t for t, _ in boxes) == sorted(labels)
    assert len(by_gid(fig, "p90:agent-a 1.0 · replay_complete marker → response", Line2D)) == 1
    assert_labels_apart(fig)


def test_gap_falls_back_to_last_history_and_says_so(tmp_path: Path) -> None:
    """Replays without a marker use last_history_to_response_ms, in a lane that says
    "last history update (no marker) → response"; a marked lane of the same agent stays apart."""
    v1_trace(tmp_path / "v1.jsonl", [80, 120, 100, 90])
    a = analyze(tmp_path)
    fig = plots.gap(a)
    assert lanes(fig) == ["agent-v1 0.1 · 4 replays\nlast history update (no marker) → response"]
    (p50,) = by_gid(fig, "p50:agent-v1 0.1 · last history update (no marker) → response", Line2D)
    assert p50.get_xdata()[0] == pytest.approx(a.replays["last_history_to_response_ms"].median())
    assert "else the last replayed history update" in axes_of(fig)[0].get_title()


def test_gap_shows_at_most_ten_lanes_and_says_what_it_left_out(tmp_path: Path) -> None:
    """Twelve agent versions: the ten with most replays get lanes, a note counts the rest."""
    for i in range(12):
        gap_trace(tmp_path / f"t{i}.jsonl", [10.0 + i] * (1 if i < 2 else 3), agent=f"ag{i}")
    fig = plots.gap(analyze(tmp_path))
    assert len(lanes(fig)) == 10
    assert not any(lane.startswith(("ag0 ", "ag1 ")) for lane in lanes(fig))
    notes = [t.get_text() for t in by_gid(fig, "note", Text)]
    assert notes == [
        "2 more lanes (2 replays) not shown: the lanes with the most replays are; "
        "`acp-trace replays` lists every replay."
    ]


def test_gap_of_the_sample_traces_has_a_lane_per_agent_version_and_source() -> None:
    """On sample_traces/: one lane per agent version and source of the gap table, each with
    all its replays, plain ticks, labels apart, and a note for the replay without a gap."""
    a = analyze(SAMPLES)
    fig = plots.gap(a)
    gaps = plots.gap_table(a.replays)
    expected = gaps.group_by("agent", "agent_version", "gap_source").len()
    assert len(lanes(fig)) == expected.height
    counts = sorted(int(re.search(r"· ([\d,]+) repl", x)[1]) for x in lanes(fig))  # type: ignore[index]
    assert counts == sorted(expected["len"].to_list())
    (ax,) = axes_of(fig)
    assert all(PLAIN_TICK.match(t) for t in tick_texts(ax))
    assert_labels_apart(fig)
    left_out = a.replays.height - gaps.height
    notes = [t.get_text() for t in by_gid(fig, "note", Text)]
    assert notes == (
        [f"{left_out} replay left out: no response, or no history and no marker."]
        if left_out == 1
        else notes
    )


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
    """The x axis goes logarithmic exactly when max/min of the positive gaps exceeds 100
    (symmetric-log, linear near zero, when some gaps are 0 ms, so none is hidden), and its
    tick labels stay plain numbers."""
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", gaps)))
    (ax,) = axes_of(fig)
    assert ax.get_xscale() == scale
    low, high = ax.get_xlim()
    assert low < min(gaps) and max(gaps) < high
    assert all(PLAIN_TICK.match(t) for t in tick_texts(ax)), tick_texts(ax)


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
    assert lanes(gap_fig) == ["agent-a 1.0 · 2 replays\nreplay_complete marker → response"]
    for fig in (gap_fig, plots.replay(a), plots.latency(a)):
        notes = [t.get_text().splitlines()[0] for t in by_gid(fig, "note", Text)]
        assert notes == ["1 ordering-only trace left out: it has no timestamps."]


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
        assert gap.get_text().startswith("replay_complete marker → response ")
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
    """--session and --request pick a replay (a child's session picks its parent's replay);
    without them the slowest is drawn."""
    a = analyze(child_trace(tmp_path / "t.jsonl"))
    assert "of parent" in plots.replay(a).get_suptitle()
    assert "of quick" in plots.replay(a, session="quick").get_suptitle()
    quick_id = a.replays.filter(pl.col("session") == "quick")["request_id"][0]
    assert "of quick" in plots.replay(a, request=quick_id).get_suptitle()
    assert "of parent" in plots.replay(a, session="kid2").get_suptitle()


@pytest.mark.parametrize(
    ("pick", "message"),
    [
        (
            {"session": "NOSUCH"},
            "--session NOSUCH: no such session; expected one of: parent, kid1, kid2, quick",
        ),
        ({"request": "99"}, "--request 99: no such request; expected one of: 2, 3"),
        ({"trace": "other.jsonl"}, "--trace other.jsonl: no such trace; expected one of: t.jsonl"),
        (  # each matches alone, not together: the choices are those the trace leaves
            {"trace": "t.jsonl", "session": "nope", "request": "2"},
            "--session nope: no such session among the replays of trace t.jsonl; "
            "expected one of: parent, kid1, kid2, quick",
        ),
        (
            {"session": "quick", "request": "2"},
            "--request 2: no such request among the replays of session quick; expected one of: 3",
        ),
    ],
)
def test_a_selector_that_matches_nothing_is_an_error_with_the_choices(
    tmp_path: Path, pick: dict[str, str], message: str
) -> None:
    """--session, --request and --trace that match no replay raise a UsageError naming the
    option and listing the values it could take (a near miss: a real request id of another
    session)."""
    a = analyze(child_trace(tmp_path / "t.jsonl"))
    with pytest.raises(UsageError) as caught:
        plots.replay(a, **pick)
    assert str(caught.value) == message


def test_choices_are_capped_and_untimed_replays_are_named(tmp_path: Path) -> None:
    """Of many sessions the message lists ten and counts the rest; a session whose only
    replay is in an ordering-only trace is named as such, not as unknown."""
    gap_trace(tmp_path / "many.jsonl", [5.0] * 14)
    b = TraceBuilder(agent="untimed-agent")
    replay(b, "u1", 50)
    ordering_only(b, tmp_path / "untimed.jsonl")
    a = analyze(tmp_path)
    with pytest.raises(UsageError, match=r"expected one of: s0, s1, .*, s9 and 4 more$"):
        choose_window(a.facts, a.timeline, untimed_traces(a.timeline), Pick(session="x"))
    with pytest.raises(UsageError, match=r"^--session u1: its replays are in ordering-only"):
        plots.replay(a, session="u1")


def test_cli_plot_with_an_unknown_session_exits_2_with_the_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`plot --kind replay --session NOSUCH` is one line on stderr and exit 2, no chart."""
    trace = child_trace(tmp_path / "t.jsonl")
    out = tmp_path / "replay.png"
    args = ["plot", str(trace), "-o", str(out), "--kind", "replay", "--session", "NOSUCH"]
    monkeypatch.setattr(sys, "argv", ["acp-trace", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "acp-trace: --session NOSUCH: no such session; expected one of: parent, kid1, kid2, quick\n"
    )
    assert not out.exists()


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
        "The slowest of 2 replaying requests for session s0; choose another with --trace, --session or --request."
    ]


def test_replay_without_marker_annotates_the_last_history_gap(tmp_path: Path) -> None:
    """An unmarked replay's lane shows "last history update (no marker) → response" with that gap."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", [333.0], marker=False))
    fig = plots.replay(a)
    gap = by_gid(fig, "gap:s0", Text)[0].get_text()
    assert gap.startswith("last history update (no marker) → response")
    assert number(gap) == pytest.approx(a.replays["last_history_to_response_ms"][0], abs=0.51)


def test_replay_zooms_on_a_short_history_before_a_long_gap(tmp_path: Path) -> None:
    """When the updates fill under a quarter of the window a second, zoomed panel shows them."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", [5000.0]))
    fig = plots.replay(a)
    overview, zoom = axes_of(fig)
    assert zoom.get_title().startswith("Zoom on the updates")
    assert zoom.get_xlim()[1] < overview.get_xlim()[1] / 4
    assert [t.get_text() for t in zoom.get_yticklabels()] == ["s0\n(4 history)"]


@pytest.mark.parametrize("n", [1, 2, 30, 1000])
def test_replay_of_many_draws_the_slowest_and_counts_the_rest(tmp_path: Path, n: int) -> None:
    """At 1, 2, 30 and 1,000 replays the chart draws the one with the longest response, on a
    plain axis that ends past its response, and says of how many it is the slowest."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", many_gaps(n, 900.0)))
    fig = plots.replay(a)
    slowest = a.replays.sort("response_ms", descending=True).row(0, named=True)
    assert f"of {slowest['session']} " in fig.get_suptitle()
    overview = axes_of(fig)[0]
    (response,) = by_gid(overview, "response", Line2D)
    assert response.get_xdata()[0] == pytest.approx(slowest["response_ms"])
    assert overview.get_xlim()[1] > slowest["response_ms"]
    assert all(PLAIN_TICK.match(t) for t in tick_texts(overview))
    notes = [t.get_text() for t in by_gid(fig, "note", Text)]
    many = f"The slowest of {n:,} replaying requests; choose another with --trace, --session or --request."
    assert notes == ([many] if n > 1 else [])


def test_replay_of_the_sample_traces_is_the_slowest_and_a_real_agent_can_be_chosen() -> None:
    """On sample_traces/: the slowest replay by default; the claude-agent-acp trace by name,
    with its unmarked gap from the last history update."""
    a = analyze(SAMPLES)
    slowest = a.replays.sort("response_ms", descending=True, nulls_last=True).row(0, named=True)
    fig = plots.replay(a)
    assert f"(request id {slowest['request_id']})" in fig.get_suptitle()
    fig = plots.replay(a, trace="claude-agent-acp-v2-resume.jsonl")
    row = a.replays.filter(pl.col("trace").str.ends_with("claude-agent-acp-v2-resume.jsonl"))
    (gap,) = by_gid(fig, f"gap:{row['session'][0]}", Text)
    assert gap.get_text().startswith("last history update (no marker) → response")
    assert number(gap.get_text()) == pytest.approx(row["last_history_to_response_ms"][0], abs=0.51)


def test_latency_of_the_sample_traces_shows_the_prompt_turn_phases() -> None:
    """The samples include prompt turns: the phase panel shows first chunk and end of turn,
    in that order, with every turn a dot."""
    a = analyze(SAMPLES)
    fig = plots.latency(a)
    _, turn_ax = axes_of(fig)
    names = [t.get_text().split(" · ")[0] for t in turn_ax.get_yticklabels()]
    assert names == ["first agent chunk", "end of turn"]
    dots = gid_prefix(fig, "strip:phase:end of turn")
    assert sum(len(d.get_offsets()) for d in dots if isinstance(d, PathCollection)) == (
        a.turns["end_ms"].drop_nulls().len()
    )


# ---------------------------------------------------------------- latency


def prompt_turns(b: TraceBuilder, sessions: list[str], accepted: bool = False) -> None:
    """A prompt turn per session: response, first chunk after 40 ms, (acceptance), idle."""
    for i, session in enumerate(sessions):
        p = b.request("session/prompt", {"sessionId": session, "prompt": []})
        b.response(p, dt=2)
        b.update(session, "agent_message_chunk", dt=40, content={"type": "text", "text": "x"})
        if accepted:
            meta = {"executablemd.session-materialization/v1": {"state": "accepted"}}
            b.update(session, "session_info_update", dt=20, _meta=meta)
        b.state(session, stopReason="end_turn", dt=300 + i)


def test_latency_has_a_box_and_a_strip_per_method_and_turn_phases(tmp_path: Path) -> None:
    """One dot per answered request for each method (a box once there are five), and the
    prompt phases below in the order they happen: first chunk, acceptance, end of turn."""
    b = TraceBuilder()
    for i in range(5):
        replay(b, f"s{i}", 100 + i)
    prompt_turns(b, [f"s{i}" for i in range(5)], accepted=True)
    a = analyze(b.write(tmp_path / "t.jsonl"))
    fig = plots.latency(a)
    req_ax, turn_ax = axes_of(fig)
    assert req_ax.get_xlabel() == "request → response (ms)"
    assert turn_ax.get_xlabel() == "ms after the session/prompt request"
    counts = dict(a.latency("method").select("method", "count").iter_rows())
    for method, n in counts.items():
        assert len(by_gid(fig, f"box:method:{method}", Patch)) == (1 if n >= 5 else 0)
        (dots,) = by_gid(fig, f"strip:method:{method}", PathCollection)
        assert len(dots.get_offsets()) == n
    names = [t.get_text().split("\n")[0] for t in turn_ax.get_yticklabels()]
    assert names == ["first agent chunk", "prompt accepted", "end of turn"]
    for phase in names:
        (dots,) = by_gid(fig, f"strip:phase:{phase}", PathCollection)
        assert len(dots.get_offsets()) == 5
    (first,) = [t.get_text() for t in req_ax.get_yticklabels() if "resume" in t.get_text()]
    resume = a.latency("method").filter(pl.col("method") == "session/resume").row(0, named=True)
    assert first == (
        f"session/resume\nn=5 · p50 {plots_ms(resume['p50_ms'])} · max {plots_ms(resume['max_ms'])}"
    )


@pytest.mark.parametrize("n", [1, 2, 30, 1000])
def test_latency_rows_show_every_value_on_a_plain_axis_from_zero(tmp_path: Path, n: int) -> None:
    """At 1, 2, 30 and 1,000 replays: every request is a dot, a box only from five, the axis
    starts at 0 ms (linear) or spans the decades (log) with plain tick labels, and a row of
    one value names that value."""
    a = analyze(gap_trace(tmp_path / "t.jsonl", many_gaps(n, 1359.0)))
    fig = plots.latency(a)
    (ax,) = axes_of(fig)
    (dots,) = by_gid(fig, "strip:method:session/resume", PathCollection)
    assert len(dots.get_offsets()) == n
    assert len(by_gid(fig, "box:method:session/resume", Patch)) == (1 if n >= 5 else 0)
    assert all(PLAIN_TICK.match(t) for t in tick_texts(ax)), tick_texts(ax)
    if ax.get_xscale() == "linear":
        assert ax.get_xlim()[0] <= 0
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert "initialize\nn=1 · 1.00 ms" in names


def test_latency_of_several_agents_has_a_row_per_agent_version(tmp_path: Path) -> None:
    """Two agent versions: one row per method and agent version, each its own colour, the
    phases too; nothing pooled across agents."""
    b = TraceBuilder(agent="agent-a", version="1.0")
    replay(b, "s0", 10.0)
    prompt_turns(b, ["s0"])
    b.write(tmp_path / "a.jsonl")
    gap_trace(tmp_path / "b.jsonl", [5000.0, 6000.0], agent="agent-b")
    a = analyze(tmp_path)
    fig = plots.latency(a)
    req_ax, _ = axes_of(fig)
    rows = [t.get_text().split("\n")[0] for t in req_ax.get_yticklabels()]
    assert rows == [
        "session/resume · agent-a 1.0",
        "session/resume · agent-b 1.0",
        "initialize · agent-a 1.0",
        "initialize · agent-b 1.0",
        "session/prompt · agent-a 1.0",
    ]
    (slow,) = by_gid(fig, "strip:method:session/resume · agent-b 1.0", PathCollection)
    expected = a.replays.filter(pl.col("agent") == "agent-b")["response_ms"].sort().to_list()
    assert sorted(x for x, _ in slow.get_offsets()) == pytest.approx(expected)
    colour = {
        row: to_hex(by_gid(fig, f"strip:method:{row}", PathCollection)[0].get_facecolors()[0])
        for row in rows
    }
    assert colour["initialize · agent-a 1.0"] == colour["session/resume · agent-a 1.0"]
    assert colour["initialize · agent-a 1.0"] != colour["initialize · agent-b 1.0"]
    (phase,) = by_gid(fig, "strip:phase:first agent chunk · agent-a 1.0", PathCollection)
    assert to_hex(phase.get_facecolors()[0]) == colour["initialize · agent-a 1.0"]


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
    if kind == "gap":  # the lane keeps a name that starts with `_` and shows `$` as is
        assert lanes(fig)[0].startswith(" _\\$x\\$ agent")
    if kind == "replay":
        assert any("sess\\$1??" in t for t in shown)  # missing glyphs drawn as `?`, no warning
    svg = plots.save(fig, tmp_path / f"{kind}.svg").read_text()
    assert SECRET not in svg


def test_save_writes_png_and_svg_and_refuses_other_suffixes(tmp_path: Path) -> None:
    """save writes a 1200 px wide PNG or an SVG; any other suffix is a usage error, a missing
    directory an output error, and a symlink planted at the target is replaced, not followed."""
    fig = plots.gap(analyze(gap_trace(tmp_path / "t.jsonl", [10, 20])))
    png = plots.save(fig, tmp_path / "gap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1200
    assert plots.save(fig, tmp_path / "gap.svg").read_text().startswith("<?xml")
    with pytest.raises(UsageError, match=r"expected a file name ending in \.png or \.svg"):
        plots.save(fig, tmp_path / "gap.jpg")
    with pytest.raises(OutputError, match="does not exist"):
        plots.save(fig, tmp_path / "missing" / "gap.png")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "link.png").symlink_to(victim)
    plots.save(fig, tmp_path / "link.png")
    assert victim.read_text() == "keep"
    assert not (tmp_path / "link.png").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
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
