"""The latency chart names each row's agent version whole (without its npm scope), has a
legend of the agent versions' colours, and counts requests as the latency table does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from acp_trace import analyze, plots
from acp_trace.render.plots._common import agent_labels, unscoped
from acp_trace.render.report.bundle import write_report
from testpaths import SAMPLES

CLAUDE = SAMPLES / "claude-agent-acp-v2-resume.jsonl"
CODEX = SAMPLES / "codex-acp-ts-v2-resume.jsonl"


def saved(fig: Figure, tmp_path: Path) -> Figure:
    """The figure as written (texts fitted to the figure by `save`), drawn."""
    plots.save(fig, tmp_path / "latency.png")
    fig.canvas.draw()
    return fig


def names(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def legend(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_unscoped_drops_the_npm_scope_unless_names_then_clash() -> None:
    """`@scope/name` reads `name`; two scopes of one name keep theirs."""
    assert unscoped(["@agentclientprotocol/claude-agent-acp", "gemini-cli"]) == {
        "@agentclientprotocol/claude-agent-acp": "claude-agent-acp",
        "gemini-cli": "gemini-cli",
    }
    assert unscoped(["@a/x", "@b/x"]) == {"@a/x": "@a/x", "@b/x": "@b/x"}
    pairs = [("@agentclientprotocol/codex-acp", "2.6.0"), ("codex-acp", "0.16.0")]
    assert sorted(agent_labels(pairs).values()) == ["codex-acp 0.16.0", "codex-acp 2.6.0"]


def test_one_agent_is_named_in_the_title_without_a_legend(tmp_path: Path) -> None:
    """One agent version: the title names it (no scope), rows name the method only."""
    fig = saved(plots.latency(analyze(CLAUDE)), tmp_path)
    assert fig.get_suptitle().startswith("Latency of claude-agent-acp 0.101.0: 2 requests")
    assert legend(fig) == []
    assert [n.split("\n")[0] for n in names(fig)] == ["initialize", "session/resume"]


def test_two_agents_keep_their_names_in_every_row_and_a_legend(tmp_path: Path) -> None:
    """Two agent versions: every row's name holds its agent version whole, and the legend
    gives each its colour."""
    fig = saved(plots.latency(analyze([CLAUDE, CODEX])), tmp_path)
    assert legend(fig) == ["claude-agent-acp 0.101.0", "codex-acp 2.6.0"]
    rows = [n.split("\n")[0] for n in names(fig)]
    assert rows == [
        "initialize · claude-agent-acp 0.101.0",
        "initialize · codex-acp 2.6.0",
        "session/resume · claude-agent-acp 0.101.0",
        "session/resume · codex-acp 2.6.0",
    ]


def test_the_sample_traces_keep_every_agent_name_and_the_report_count(tmp_path: Path) -> None:
    """Quickstart's report: no row name is cut (no ellipsis), each names one of the legend's
    agent versions, and the title's request count is the one report.md gives above its
    latency table, the sum of that table's requests."""
    a = analyze(SAMPLES)
    write_report(a, tmp_path / "report")
    fig = saved(plots.latency(a), tmp_path)
    agents = legend(fig)
    assert len(agents) == 5 and "claude-agent-acp 0.101.0" in agents
    for name in names(fig):
        assert "…" not in name and "..." not in name
        assert any(name.split("\n")[0].endswith(" · " + agent) for agent in agents), name
    total = int(a.latency("agent")["count"].sum())
    answered = total - int(a.latency("agent")["unanswered"].sum())
    said = f"{total:,} requests ({answered:,} answered)"
    assert said in fig.get_suptitle()
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"{said}, per agent version and method:" in report
    table = report.split("## Latency")[1].split("Prompt turns")[0]
    rows = re.findall(r"^\| [^|]+ \| [^|]+ \| [^|]+ \| (\d+) \|", table, re.M)
    assert sum(int(r) for r in rows) == total


@pytest.mark.parametrize("n", [12])
def test_many_agents_each_get_a_legend_entry(tmp_path: Path, n: int) -> None:
    """With twelve agent versions every one has a legend entry and colours repeat after ten."""
    from tracebuilder import TraceBuilder

    paths = []
    for i in range(n):
        b = TraceBuilder(agent=f"@scope/agent-{i}", version="1.0")
        b.response(b.request("initialize", {}), dt=5.0 + i)
        paths.append(b.write(tmp_path / f"t{i}.jsonl"))
    fig = saved(plots.latency(analyze(paths)), tmp_path)
    assert legend(fig) == sorted((f"agent-{i} 1.0" for i in range(n)), key=_natural)


def _natural(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))
