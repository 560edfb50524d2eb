"""`acp-trace demo`: the whole tool in one command.

Records the demo client and the demo agent through the tap (`acp-trace record`) in a few
scenarios (a correct v2 replay with children and cold-start gaps, a v1 load, and a few
faults), then analyzes the traces: a text summary of replays and findings, and the report
bundle (`acp_trace.render.report.bundle.report`: Markdown, HTML, charts).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.errors import RecordError

DEMO_CWD = "/home/user/project"
DEMO_PROMPT = "Summarize the replayed history in one line."


@dataclass(frozen=True)
class Scenario:
    """One recording: what the client does and how the agent behaves."""

    name: str
    says: str
    protocol: int = 2
    resumes: int = 1
    agent: tuple[str, ...] = ()


SCENARIOS = (
    Scenario(
        "v2-complete-children",
        "v2 resumes with two child sessions and a cold-start gap before each response",
        resumes=3,
        agent=("--turns", "40", "--children", "2", "--gap", "lognormal:-1,0.5", "--seed", "1"),
    ),
    Scenario("v1-load", "a v1 session/load: no marker, v1_loaded", 1, agent=("--turns", "40")),
    Scenario(
        "v2-marker-missing", "a v2 replay without its marker", agent=("--fault", "marker-missing")
    ),
    Scenario(
        "v2-live-before-marker",
        "an available_commands_update inside the replay",
        agent=("--fault", "live-before-marker"),
    ),
    Scenario(
        "v1-load-updates-after-response",
        "a v1 load that answers after its first update, like gemini-cli 0.61.0",
        1,
        agent=("--turns", "10", "--fault", "load-updates-after-response"),
    ),
)


def acp_trace_command(*args: str) -> list[str]:
    """`acp-trace ARGS` run by this interpreter (works without the entry point on PATH)."""
    return [sys.executable, "-m", "acp_trace", *args]


def record_scenario(scenario: Scenario, out_dir: Path) -> Path:
    """Record one scenario through the tap; returns the trace path."""
    trace = out_dir / f"demo-{scenario.name}.jsonl"
    agent = acp_trace_command("demo-agent", "--session", "sess_demo", *scenario.agent)
    tap = acp_trace_command("record", "-o", str(trace), "--", *agent)
    opts = ClientOptions(
        command=tuple(tap),
        protocol=scenario.protocol,
        resumes=scenario.resumes,
        session=None,  # session/new, then a prompt (the latency chart's turn phases), then replays
        prompt=DEMO_PROMPT,
        cwd=DEMO_CWD,
    )
    result = run_client(opts)
    if not trace.exists():
        raise RecordError(f"demo {scenario.name}: no trace was written ({result.problem})")
    return trace


def run_demo(out_dir: Path, scenarios: tuple[Scenario, ...] = SCENARIOS) -> list[Path]:
    """Record every scenario into `out_dir` (created); returns the traces in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [record_scenario(s, out_dir) for s in scenarios]


def build_outputs(traces: list[Path], out_dir: Path) -> str:
    """Write the report bundle into `out_dir/report`; returns the summary and where it went."""
    from acp_trace.render.report.bundle import report

    files = report(traces, out_dir / "report", command="acp-trace demo")
    where = f"\nReport: {files.html} (also {files.markdown.name}, {len(files.charts)} charts)\n"
    return summary_text(traces) + where


def summary_text(traces: list[Path]) -> str:
    """Replay outcomes and timings, then findings, as plain text tables."""
    from acp_trace.analysis import check
    from acp_trace.analysis import replays_of as replays
    from acp_trace.render.report import format_table

    short = pl.col("trace").str.split("/").list.last()
    table = replays(traces).with_columns(short)
    columns = [
        "trace",
        "session",
        "request_id",
        "outcome",
        "history_updates",
        "last_history_to_response_ms",
        "marker_to_response_ms",
    ]
    findings = check(traces).with_columns(short)
    out = ["Replays (one row per replaying request and session):\n", format_table(table, columns)]
    out.append(f"\nFindings ({findings.height}):\n")
    if findings.height:
        out.append(format_table(findings, ["rule", "severity", "trace", "session", "seq"]))
    return "".join(out)
