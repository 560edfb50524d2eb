"""The diff chart holds two ECDFs per agent on a shared axis, and says so when empty."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import acp_trace
from acp_trace.render.plots.diff import diff_figure
from tracebuilder import TraceBuilder


def _replays(tmp_path: Path, name: str, agents: dict[str, list[float]]) -> pl.DataFrame:
    paths = []
    for agent, gaps in agents.items():
        b = TraceBuilder(agent=agent)
        for gap in gaps:
            rid = b.resume("s")
            b.history("s", 1)
            b.marker("s")
            b.state("s", dt=0)
            b.response(rid, dt=gap)
        paths.append(b.write(tmp_path / f"{name}-{agent}.jsonl"))
    return acp_trace.replays(paths)


def test_one_lane_per_agent_with_both_sides(tmp_path: Path) -> None:
    """Each agent gets a row with a BASE and a NEW step line whose labels give n, p50 and p90;
    the shared x axis goes logarithmic when gaps span four decades."""
    base = _replays(tmp_path, "b", {"fast": [1, 1.2, 1.1], "slow": [900, 1000, 1100]})
    new = _replays(tmp_path, "n", {"fast": [1.5, 1.7], "slow": [5000, 6000]})
    fig = diff_figure(base, new)
    axes = fig.axes
    assert [ax.get_title(loc="left") for ax in axes] == ["fast", "slow"]
    for ax in axes:
        labels = [line.get_label() for line in ax.get_lines()]
        assert (
            len(labels) == 2
            and labels[0].startswith("BASE (n=")
            and labels[1].startswith("NEW (n=")
        )
    assert axes[1].get_lines()[1].get_label() == "NEW (n=2): p50 5,500 ms, p90 5,900 ms"
    assert axes[0].get_xscale() == "log" and axes[1].get_xlabel() == "gap (ms), log scale"
    assert "BASE vs NEW" in fig.get_suptitle()


def test_a_side_without_replays_says_so(tmp_path: Path) -> None:
    """An agent only in BASE has an empty NEW line labelled 'no replay'."""
    base = _replays(tmp_path, "b", {"only": [5, 6]})
    new = _replays(tmp_path, "n", {"other": [7, 8]})
    fig = diff_figure(base, new)
    only = next(ax for ax in fig.axes if ax.get_title(loc="left") == "only")
    assert only.get_lines()[1].get_label() == "NEW: no replay"


def test_nothing_to_draw(tmp_path: Path) -> None:
    """With no measurable gap on either side the figure says so."""
    empty = _replays(tmp_path, "e", {})
    fig = diff_figure(empty, empty)
    texts = [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("No replay with a measurable gap on either side" in t for t in texts)
