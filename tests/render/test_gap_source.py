"""Where a gap starts is named from its `gap_source` by one function, in every text a person
reads: a vendor end-of-replay event is the vendor event, never a marker."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from matplotlib.text import Text

from acp_trace import analyze, plots
from acp_trace.render.plots.gap import gap_start
from acp_trace.render.report.bundle import write_report
from clirun import runner
from testpaths import SAMPLES

V1_AIR = SAMPLES / "claude-agent-acp-v1-load-air.jsonl"
EVENT = "vendor event jetbrains.air.loadReplayEnd"


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("marker", "replay_complete marker"),
        ("vendor:jetbrains.air.loadReplayEnd", EVENT),
        ("last_history", "last history update (no marker)"),
        (None, "-"),
    ],
)
def test_gap_start_names_each_source(source: str | None, text: str) -> None:
    """`replay_complete` alone is a marker; a vendor event is named by its path."""
    assert gap_start(source) == text


def test_a_v1_load_ended_by_the_vendor_event_has_a_vendor_gap_source() -> None:
    """claude-agent-acp's v1 load with jetbrains.air.loadReplayEnd: `gap_source` is
    `vendor:PATH` (rules.md), not `marker`, though the event is the load's marker."""
    a = analyze(V1_AIR)
    assert set(a.replays["outcome"]) == {"v1_loaded"}
    assert set(a.replays["gap_source"]) == {"vendor:jetbrains.air.loadReplayEnd"}


def test_the_charts_of_a_v1_vendor_load_name_the_vendor_event_not_a_marker() -> None:
    """The gap chart's lane and the replay chart's gap text say "vendor event PATH"."""
    a = analyze(V1_AIR)
    gap = plots.gap(a)
    (ax,) = gap.axes
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes and all(f"{EVENT} → response" in lane for lane in lanes)
    assert not any("marker" in lane for lane in lanes)
    replay = plots.replay(a)
    texts = [t.get_text() for t in replay.findobj(Text) if str(t.get_gid()).startswith("gap:")]
    assert texts and all(t.startswith(f"{EVENT} → response") for t in texts)


def test_the_report_of_a_v1_vendor_load_names_the_vendor_event(tmp_path: Path) -> None:
    """report.md's agents table, headline and replay rows call the gap's start the vendor
    event; no cell calls it a marker."""
    out = tmp_path / "report"
    write_report(analyze(V1_AIR), out)
    text = (out / "report.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("|") and "v1\\_loaded" in line]
    assert len(rows) == 3  # the agents table's row and the two replays
    assert all(f"| {EVENT} |" in row for row in rows)
    assert not any("| marker |" in row or "replay_complete marker" in row for row in rows)


def test_replays_of_a_v1_vendor_load_show_the_vendor_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`acp-trace replays` shows `vendor:jetbrains.air.loadReplayEnd` as the gap source, in
    the table and in JSON."""
    cli = runner(tmp_path, monkeypatch, capsys)
    table = cli("replays", str(V1_AIR), width=200)
    assert table.code == 0
    rows = [line for line in table.out.splitlines() if "v1_loaded" in line]
    assert rows and all("vendor:jetbrains.air.loadReplayEnd" in row for row in rows)
    assert not any(" marker " in row for row in rows)
    data = orjson.loads(cli("replays", str(V1_AIR), "--format", "json").out)
    assert {r["gap_source"] for r in data} == {"vendor:jetbrains.air.loadReplayEnd"}


def test_only_gap_start_turns_a_gap_source_into_words() -> None:
    """No module of render/ or cli/ but render/gap_source.py spells a source out itself (no
    `removeprefix("vendor:")`, no "no marker:" text of its own)."""
    from testpaths import ROOT

    src = ROOT / "src" / "acp_trace"
    found = [
        str(path.relative_to(src))
        for folder in ("render", "cli")
        for path in sorted((src / folder).rglob("*.py"))
        if path.name != "gap_source.py"
        and any(
            needle in path.read_text()
            for needle in ('removeprefix("vendor:")', "removeprefix('vendor:')", "no marker:")
        )
    ]
    assert found == []


def test_the_sample_traces_gap_lanes_are_whole_once_saved(tmp_path: Path) -> None:
    """Quickstart's gap chart: every lane's label survives `save` uncut, the agent named
    without its npm scope and the vendor event by its whole path."""
    fig = plots.gap(analyze(SAMPLES))
    plots.save(fig, tmp_path / "gap.png")
    fig.canvas.draw()
    lanes = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert not any("…" in lane or "@" in lane for lane in lanes), lanes
    assert "claude-agent-acp 0.101.0 · 3 replays\n" + EVENT + " → response" in lanes
