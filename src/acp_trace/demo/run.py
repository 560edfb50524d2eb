"""`acp-trace demo`: the whole tool in one command.

Records the demo client and the demo agent through the tap (`acp-trace record`) in a few
scenarios (a correct v2 replay with children and cold-start gaps, a v1 load, and a few
faults), then analyzes the traces: a text summary of replays and findings, and the report
bundle (`acp_trace.render.report.bundle.report`: Markdown, HTML, charts).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from acp_trace.analysis import Analysis
from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.errors import RecordError
from acp_trace.files import output_dir
from acp_trace.quantities import count, counted
from acp_trace.render.report.bundle import ReportFiles

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
    sid = f"sess_{scenario.name}"  # its own: recordings analyzed together share equal ids
    agent = acp_trace_command("demo-agent", "--session", sid, *scenario.agent)
    tap = acp_trace_command("record", "-o", str(trace), "--", *agent)
    opts = ClientOptions(
        command=tuple(tap),
        protocol=scenario.protocol,
        resumes=scenario.resumes,
        # the agent's session from before (its fabricated history), opened without replay, a
        # prompt on it (the latency chart's turn phases), then its replays
        session=sid,
        prompts=(DEMO_PROMPT,),
        cwd=DEMO_CWD,
    )
    result = run_client(opts)
    if not trace.exists():
        raise RecordError(f"demo {scenario.name}: no trace was written ({result.problem})")
    return trace


Progress = Callable[[int, int, str], None]  # (step done, steps in all, what comes next)


def run_demo(
    out_dir: Path, scenarios: tuple[Scenario, ...] = SCENARIOS, progress: Progress | None = None
) -> list[Path]:
    """Record every scenario into `out_dir` (created 0700: the traces are private); returns the
    traces in order. `progress` hears of each recording before it starts."""
    folder = output_dir(out_dir)
    traces = []
    for number, scenario in enumerate(scenarios, 1):
        if progress is not None:
            progress(number - 1, len(scenarios), f"recording {scenario.name}: {scenario.says}")
        traces.append(record_scenario(scenario, folder))
    return traces


@dataclass(frozen=True)
class DemoOutputs:
    """What the demo made of its traces."""

    summary: str  # replays and findings as text tables
    report: ReportFiles


def build_outputs(
    traces: list[Path], out_dir: Path, progress: Progress | None = None, width: int | None = None
) -> DemoOutputs:
    """Analyze the traces once, write the report bundle into `out_dir/report`, and return it
    with the text summary (tables fitted to `width`)."""
    from acp_trace.analysis import analyze
    from acp_trace.render.report.bundle import write_report

    if progress is not None:
        progress(0, 2, f"analyzing {counted(len(traces), 'trace')}")
    a = analyze(traces)
    text = summary_text(a, width)
    if progress is not None:
        progress(1, 2, f"writing the report into {out_dir / 'report'}")
    files = write_report(a, out_dir / "report", command="acp-trace demo")
    return DemoOutputs(text, files)


DEMO_COLUMNS = (
    "trace",
    "session",
    "request_id",
    "outcome",
    "history_updates",
    "gap_ms",
    "response_ms",
)


def summary_text(a: Analysis | list[Path], width: int | None = None) -> str:
    """Replay outcomes and timings (slowest first, as `acp-trace replays` shows them), then
    the findings, as text tables fitted to `width`."""
    from acp_trace.analysis import analyze
    from acp_trace.render.report import format_table
    from acp_trace.render.report.tables import replays_table, to_text

    if not isinstance(a, Analysis):
        a = analyze(a)
    replays = replays_table(a.replays, DEMO_COLUMNS, width=width)
    findings = a.findings().with_columns(pl.col("trace").str.split("/").list.last())
    out = ["Replays (one row per replaying request and session):\n", to_text(replays, width)]
    out.append(f"\nFindings ({count(findings.height)}):\n")
    if findings.height:
        out.append(format_table(findings, ["rule", "severity", "trace", "session", "seq"], width))
    return "".join(out)
