"""The replay chart's "agent stderr" lane: the agent's stderr lines in the window, the phases
they name as spans, and labels that never overlap."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from acp_trace import analyze, plots
from acp_trace.quantities import trimmed
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

CLAUDE = "claude-agent-acp-v2-resume.jsonl"


def axes_of(fig: Figure) -> list[Axes]:
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def lane_names(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def bars(ax: Axes, kind: str) -> dict[int, Rectangle]:
    """The phase bars of one kind (`leaf-phase`, `outer-phase`) by the seq of their line."""
    out = {}
    for patch in ax.patches:
        gid = str(patch.get_gid() or "")
        if gid.startswith(f"{kind}:") and isinstance(patch, Rectangle):
            out[int(gid.split(":")[1])] = patch
    return out


def phase_labels(ax: Axes) -> list[Text]:
    fig = ax.get_figure(root=True)
    assert fig is not None
    fig.canvas.draw()
    found = ax.findobj(lambda a: str(a.get_gid() or "").startswith("phase-label:"))
    return [t for t in found if isinstance(t, Text)]


def line_ticks(ax: Axes) -> int:
    found = ax.findobj(lambda a: a.get_gid() == "stderr-lines")
    return sum(len(c.get_offsets()) for c in found if isinstance(c, PathCollection))


def assert_apart_and_inside(ax: Axes, labels: list[Text]) -> None:
    """No two labels overlap, and each one is inside the axes."""
    frame = ax.get_window_extent()
    boxes: list[tuple[str, Bbox]] = [(t.get_text(), Text.get_window_extent(t)) for t in labels]
    for i, (text, box) in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text
        for other, box2 in boxes[i + 1 :]:
            assert not box.overlaps(box2), (text, other)


def resume_with_stderr(path: Path) -> Path:
    """A marked resume, then stderr lines in its gap: one without a phase, `sdk-initialize`
    (730 ms), `session-ready` (812 ms, which holds it) and `models` (0 ms); the response."""
    b = TraceBuilder(agent="claude-agent-acp", version="0.101.0")
    rid = b.resume("s1", dt=1)
    b.history("s1", 2, dt=1)
    b.marker("s1")
    b.text("stderr", "[authStatus] no identity signal", dt=100)
    b.text("stderr", "[session/create] sessionId=s1 phase=sdk-initialize durationMs=730", dt=700)
    b.text("stderr", "[session/load] sessionId=s1 phase=session-ready durationMs=812", dt=10)
    b.text("stderr", "[session/create] sessionId=s1 phase=models durationMs=0", dt=5)
    b.state("s1", dt=79)
    b.response(rid, dt=1)
    return b.write(path)


def test_stderr_lines_get_a_lane_with_a_bar_per_phase(tmp_path: Path) -> None:
    """Below the session lanes: a tick per stderr line, a leaf bar from start to end per leaf
    phase, a light bar above it for the phase that holds it; labelled with name and length."""
    a = analyze(resume_with_stderr(tmp_path / "t.jsonl"))
    fig = plots.replay(a)
    ax = axes_of(fig)[0]
    assert lane_names(ax) == ["s1\n(4 history)", "agent stderr\n(4 lines, 3 phases)"]
    stderr_y = ax.get_yticks()[1]
    assert line_ticks(ax) == 4
    tl = a.timeline
    request_t = tl.filter(pl.col("method") == "session/resume")["t_ms"][0]
    seq, at = tl.filter(pl.col("src") == "stderr").select("seq", "t_ms")
    leaves, outer = bars(ax, "leaf-phase"), bars(ax, "outer-phase")
    assert sorted(leaves) == [seq[1], seq[3]] and sorted(outer) == [seq[2]]
    sdk = leaves[seq[1]]  # a phase is logged when it ends: [t - duration, t]
    assert sdk.get_x() == pytest.approx(at[1] - request_t - 730)
    assert sdk.get_width() == pytest.approx(730)
    ready = outer[seq[2]]
    assert ready.get_x() == pytest.approx(at[2] - request_t - 812)
    assert ready.get_width() == pytest.approx(812)
    assert ready.get_y() > sdk.get_y() + sdk.get_height()  # above the leaf it holds
    assert stderr_y - 0.5 < sdk.get_y() < stderr_y + 0.5
    assert to_rgb(sdk.get_facecolor()) != to_rgb(ready.get_facecolor())  # leaves stand out
    labels = {t.get_text(): t for t in phase_labels(ax)}
    assert set(labels) == {"sdk-initialize 730 ms", "session-ready 812 ms"}  # 0 ms: no label
    assert to_rgb(labels["sdk-initialize 730 ms"].get_color()) < to_rgb(
        labels["session-ready 812 ms"].get_color()
    )  # the leaf's label darker
    sdk_label = labels["sdk-initialize 730 ms"].get_position()
    assert sdk_label[0] == pytest.approx(sdk.get_x() + sdk.get_width() / 2)  # under its bar
    assert sdk_label[1] < sdk.get_y() and labels["session-ready 812 ms"].get_position()[1] > (
        ready.get_y() + ready.get_height()
    )
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"agent stderr line", "phase (holds no other)", "phase that holds others"} <= set(legend)


def test_a_replay_without_stderr_has_no_stderr_lane(tmp_path: Path) -> None:
    """No stderr line inside the window: only the session lanes, no phase artists; stderr
    outside the window (before the request, after the response) does not count."""
    b = TraceBuilder(agent="quiet", version="1.0")
    b.text("stderr", "[boot] phase=start durationMs=40")
    rid = b.resume("s1")
    b.history("s1", 2)
    b.marker("s1")
    b.response(rid, dt=300)
    b.text("stderr", "[after] phase=late durationMs=5")
    fig = plots.replay(analyze(b.write(tmp_path / "t.jsonl")))
    for ax in axes_of(fig):
        assert lane_names(ax) == ["s1\n(4 history)"]
        assert line_ticks(ax) == 0 and not bars(ax, "leaf-phase") and not phase_labels(ax)


def test_the_real_cold_resume_shows_sdk_initialize_filling_the_gap() -> None:
    """claude-agent-acp 0.101.0's cold resume: its 1,327 ms sdk-initialize bar covers most of
    the gap from the last history update to the response, and is labelled so."""
    a = analyze([SAMPLES / CLAUDE])
    row = a.replays.row(0, named=True)
    fig = plots.replay(a)
    ax = axes_of(fig)[0]
    tl = a.timeline
    request = tl.filter(pl.col("method") == "session/resume", pl.col("kind") == "request")
    answer = tl.filter(pl.col("kind") == "response", pl.col("request_method") == "session/resume")
    lines = tl.filter(
        pl.col("src") == "stderr",
        pl.col("seq") > request["seq"][0],
        pl.col("seq") < answer["seq"][0],
    ).height
    assert lane_names(ax)[-1].startswith(f"agent stderr\n({lines} lines, ")
    assert line_ticks(ax) == lines
    (sdk,) = [t for t in phase_labels(ax) if t.get_text().startswith("sdk-initialize")]
    assert sdk.get_text() == "sdk-initialize 1,327 ms"
    phase = a.gap_phases.filter(pl.col("phase") == "sdk-initialize").row(0, named=True)
    (bar,) = [b for b in bars(ax, "leaf-phase").values() if b.get_width() == 1327]
    assert bar.get_x() == pytest.approx(phase["start_ms"])
    gap_start = row["last_history_ms"]
    covered = min(bar.get_x() + bar.get_width(), row["response_ms"]) - max(bar.get_x(), gap_start)
    assert covered / row["last_history_to_response_ms"] > 0.9
    for dpi in (100, 64):  # as saved, and as the notebook shows it (small text runs wider)
        fig.set_dpi(dpi)
        for panel in axes_of(fig):  # the zoom on the replay too
            assert_apart_and_inside(panel, phase_labels(panel))


def many_lines(path: Path, n: int) -> Path:
    """A resume whose gap holds `n` stderr lines: every other one a 4 ms phase, the others
    counts (`rows=N`, not durations) and plain text; then a phase that holds them all."""
    b = TraceBuilder(agent="noisy", version="1.0")
    rid = b.resume("s1")
    b.history("s1", 2)
    b.marker("s1")
    for i in range(n):
        if i % 2:
            b.text("stderr", f"[init] phase=step-{i} durationMs=4", dt=5)
        else:
            b.text("stderr", f"[load] loaded rows={i} plain text", dt=5)
    b.text("stderr", f"[load] phase=session-ready durationMs={5 * n}", dt=1)
    b.response(rid, dt=20)
    return b.write(path)


@pytest.mark.parametrize("n", [2, 30, 200])
def test_many_lines_stay_readable(tmp_path: Path, n: int) -> None:
    """At 2, 30 and 200 lines every line is a tick and every phase a bar; the labels never
    overlap, stay inside the axes and name only phases wide enough to read."""
    fig = plots.replay(analyze(many_lines(tmp_path / "t.jsonl", n)))
    ax = axes_of(fig)[0]
    assert line_ticks(ax) == n + 1
    assert len(bars(ax, "leaf-phase")) == n // 2
    assert len(bars(ax, "outer-phase")) == (1 if n > 2 else 0) + (n == 2)
    labels = phase_labels(ax)
    assert_apart_and_inside(ax, labels)
    assert f"session-ready {5 * n:,} ms" in [t.get_text() for t in labels]
    assert all("row" not in t.get_text() for t in labels)  # a count is no phase
    if n == 200:  # 4 ms of 1 s: too thin to label
        assert [t.get_text() for t in labels] == ["session-ready 1,000 ms"]


def test_phase_names_from_stderr_are_safe_labels(tmp_path: Path) -> None:
    """A phase name with a leading `_` is shown literally (not hidden as a legend name); the
    rest of the line (a secret, say) is never drawn."""
    b = TraceBuilder(agent="a", version="1")
    rid = b.resume("s1")
    b.history("s1", 1)
    b.marker("s1")
    b.text("stderr", "[x] phase=_evil durationMs=50 token=$SECRET-IN-STDERR$", dt=60)
    b.response(rid, dt=5)
    fig = plots.replay(analyze(b.write(tmp_path / "t.jsonl")))
    shown = [t.get_text() for t in fig.findobj(Text)]
    assert " _evil 50 ms" in shown
    assert all("SECRET" not in t for t in shown)
    assert "SECRET" not in plots.save(fig, tmp_path / "r.svg").read_text()


@pytest.mark.parametrize(
    ("value", "text"),
    [(1327.0, "1,327 ms"), (4.0, "4 ms"), (0.0, "0 ms"), (12.5, "12.5 ms"), (0.25, "0.25 ms")],
)
def test_duration_is_written_as_logged(value: float, text: str) -> None:
    """Whole milliseconds without decimals, thousands separated; fractions to two places."""
    assert f"{trimmed(value)} ms" == text
