"""The replay chart of a burst: when the tap stamped the replayed history at one moment, the
zoom shows the updates in the order they arrived, so no history tick hides under the marker."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.collections import PathCollection

from acp_trace import analyze, plots
from tracebuilder import TraceBuilder


def burst(path: Path, spread: float) -> Path:
    """A resume whose 30 history updates, marker and state come `spread` ms apart each, then a
    response 900 ms later."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1")
    b.history("s1", 15, dt=spread)
    b.marker("s1", dt=spread)
    b.state("s1", dt=spread)
    b.response(rid, {}, dt=900)
    return b.write(path)


def offsets(fig: object, gid: str, panel: int) -> list[float]:
    ax = fig.axes[panel]  # type: ignore[attr-defined]
    found = [c for c in ax.collections if isinstance(c, PathCollection) and c.get_gid() == gid]
    return [float(x) for x in found[0].get_offsets()[:, 0]] if found else []


@pytest.mark.parametrize("first", [0.0, 5.0])
def test_a_burst_is_zoomed_in_arrival_order(tmp_path: Path, first: float) -> None:
    """All updates stamped at one moment (at 0 ms or 5 ms after the request): a second panel
    puts the 30 history ticks at 1..30 and the marker at 31, after them, not on them."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1", dt=1)
    b.update("s1", "user_message", dt=first, messageId="m0", content=[])
    b.history("s1", 15, dt=0)
    b.marker("s1", dt=0)
    b.response(rid, {}, dt=900)
    fig = plots.replay(analyze(str(b.write(tmp_path / "t.jsonl"))))
    assert len(fig.axes) == 2
    assert fig.axes[1].get_xlabel() == "update, in arrival order"
    ticks = offsets(fig, "history:s1", 1)
    assert ticks == [float(n) for n in range(1, 32)]
    assert offsets(fig, "marker:s1", 1) == [32.0]
    assert "(the tap stamped all 32 at one moment)" in fig.axes[1].get_title()


def test_spread_updates_keep_the_time_zoom(tmp_path: Path) -> None:
    """Updates 1 ms apart: no arrival-order panel; the zoom (if any) is on time."""
    fig = plots.replay(analyze(str(burst(tmp_path / "t.jsonl", 1.0))))
    assert all(ax.get_xlabel() != "update, in arrival order" for ax in fig.axes)


def test_a_burst_zoom_shows_no_phase_labels_of_the_time_axis(tmp_path: Path) -> None:
    """The arrival-order panel has no stderr lane: the phases the agent logged (a time span
    each) are labelled in the time panel only, never on the update-number axis below it
    (claude-agent-acp-v1-load-air's report once showed them there, pointing off the chart)."""
    b = TraceBuilder(agent="agent-x", version="1.0")
    rid = b.resume("s1", dt=1)
    b.text("stderr", "[resume] sessionId=s1 phase=read-transcript durationMs=400", dt=400)
    b.update("s1", "user_message", dt=1, messageId="m0", content=[])
    b.history("s1", 15, dt=0)
    b.marker("s1", dt=0)
    b.text("stderr", "[session/create] sessionId=s1 phase=sdk-initialize durationMs=850", dt=850)
    b.response(rid, {}, dt=10)
    fig = plots.replay(analyze(str(b.write(tmp_path / "t.jsonl"))))
    assert fig.axes[1].get_xlabel() == "update, in arrival order"
    fig.canvas.draw()

    def labels(ax: object) -> list[str]:
        found = ax.findobj(lambda a: str(a.get_gid() or "").startswith("phase-label:"))  # type: ignore[attr-defined]
        return [t.get_text() for t in found]

    assert "sdk-initialize 850 ms" in labels(fig.axes[0])
    assert labels(fig.axes[1]) == []
