"""A chart with hostile labels is drawn with its labels cut, never left out: a text that lands
far off the figure (where FreeType overflows) is not drawn, and a phase of no finite length
is not placed at all."""

from __future__ import annotations

from pathlib import Path

from matplotlib.text import Text

from acp_trace import analyze, plots
from acp_trace.render.report.bundle import write_report
from tracebuilder import TraceBuilder

HOSTILE = (
    "W" * 3000 + "\x1b[31m\x07" * 300 + "\u05e9\u0627" * 1500 + "\u202e\u2067"
    + "a" + "\u0301\u0302\u0303" * 700
)  # fmt: skip


def hostile_phases(path: Path) -> Path:
    """A replay whose agent, version and session are thousands of characters of controls,
    RTL and combining marks, and whose stderr names a phase of 10^400 ms and one of 10^30 ms."""
    b = TraceBuilder(agent=HOSTILE, version=HOSTILE)
    session = HOSTILE
    rid = b.resume(session)
    b.history(session, 2)
    b.marker(session)
    b.text("stderr", f"[x] sessionId=s phase=endless durationMs={'9' * 400}", 2)
    b.text("stderr", f"[x] sessionId=s phase=huge durationMs={'9' * 30}", 2)
    b.text("stderr", "[x] sessionId=s phase=sdk-initialize durationMs=3", 2)
    b.response(rid, {}, dt=100)
    return b.write(path)


def test_the_replay_chart_of_a_hostile_trace_is_drawn(tmp_path: Path) -> None:
    """The report draws all three charts (none named as failed); the replay chart keeps the
    finite phases and leaves the endless one out (no NaN placement: warnings are errors)."""
    a = analyze(hostile_phases(tmp_path / "h.jsonl"))
    files = write_report(a, tmp_path / "r")
    assert files.failed == {} and len(files.charts) == 4
    fig = plots.replay(a)
    lane = [t.get_text() for t in fig.axes[0].get_yticklabels()][-1]
    assert lane == "agent stderr\n(3 lines, 2 phases)"


def test_a_label_pushed_far_off_the_figure_is_left_out_not_the_chart(tmp_path: Path) -> None:
    """A text a million data units off the replay chart's axis (FreeType's raster overflow
    when drawn) is hidden by `save`; the chart is written and the other texts stay."""
    a = analyze(hostile_phases(tmp_path / "h.jsonl"))
    fig = plots.replay(a)
    ax = fig.axes[0]
    far = ax.annotate("far label", xy=(0, 0), xytext=(1e6, 0), annotation_clip=False)
    plots.save(fig, tmp_path / "replay.png")
    assert (tmp_path / "replay.png").stat().st_size > 10_000
    assert not far.get_visible()
    shown = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert any(t.get_text().startswith("replay_complete marker → response") for t in shown)
