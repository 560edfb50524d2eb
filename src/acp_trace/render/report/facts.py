"""The top of the report, the key facts: what was read, one sentence with the answer, and
the agents table (gap p50, p90 and max first, then agent, version, gap source, the largest
phase the agent's stderr names inside a gap, outcomes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from acp_trace import __version__
from acp_trace.analysis.phases import largest_phases
from acp_trace.analysis.timeline import untimed_traces
from acp_trace.quantities import count, duration
from acp_trace.render import plots
from acp_trace.render.plots._common import natural, plural
from acp_trace.render.plots.gap import MIN_REPLAYS, gap_start, with_gap
from acp_trace.render.report.context import Context, capped
from acp_trace.render.report.document import Block, Heading, Image, Paragraph

if TYPE_CHECKING:
    from acp_trace.analysis.front import Analysis

TITLE = "acp-trace report"
NO_GAP = "no gap"


def source_name(source: str | None) -> str:
    """A gap source for a report cell (`gap_start`): `replay_complete marker`, `vendor event
    PATH`, `last history update (no marker)`, `-`."""
    return gap_start(None if source == NO_GAP else source)


def gap_rows(a: Analysis, skipped: pl.DataFrame) -> pl.DataFrame:
    """Per agent version and gap source: replays, outcomes, traces, protocols, the gap's
    p50, p90 (from `MIN_REPLAYS[90]` replays) and max, and the largest phase inside a gap
    (`phase`, null when none); agents without replays too."""
    replays = with_gap(a.replays, untimed_traces(a.timeline))
    # the agents table's `source` column is the gap's (not the fidelity field of that name)
    replays = replays.with_columns(pl.col("gap_source").fill_null(NO_GAP).alias("source"))
    out = []
    groups = replays.group_by("agent", "agent_version", "source", maintain_order=True)
    for (agent, version, source), part in groups:
        values = part["gap_ms"].drop_nulls().to_numpy().astype(np.float64)
        counts = part["outcome"].value_counts(sort=True, name="n").rows()
        out.append(
            {
                "agent": agent,
                "agent_version": version,
                "source": source,
                "replays": part.height,
                "outcomes": ", ".join(f"{o} {count(n)}" for o, n in counts),
                "traces": part["trace"].n_unique(),
                "protocol": _protocols(part["protocol"]),
                "p50": _quantile(values, 50),
                "p90": _quantile(values, 90) if values.size >= MIN_REPLAYS[90] else None,
                "max": float(values.max()) if values.size else None,
            }
        )
    seen = {(r["agent"], r["agent_version"]) for r in out}
    conns = a.timeline.filter(~pl.col("trace").is_in(skipped["trace"].implode()))
    for (agent, version), part in conns.group_by("agent", "agent_version", maintain_order=True):
        if (agent, version) not in seen:
            out.append(
                {
                    "agent": agent,
                    "agent_version": version,
                    "source": NO_GAP,
                    "replays": 0,
                    "outcomes": "-",
                    "traces": part["trace"].n_unique(),
                    "protocol": _protocols(part["protocol"]),
                    "p50": None,
                    "p90": None,
                    "max": None,
                }
            )
    out.sort(key=lambda r: (natural(r["agent"]), natural(r["agent_version"]), r["source"]))
    table = pl.DataFrame(out, schema=GAP_SCHEMA)
    keys = ["agent", "agent_version", "source"]
    return table.join(largest_phase(a, replays), on=keys, how="left", nulls_equal=True)


GAP_SCHEMA = {
    "agent": pl.String, "agent_version": pl.String, "source": pl.String, "replays": pl.Int64,
    "outcomes": pl.String, "traces": pl.Int64, "protocol": pl.String, "p50": pl.Float64,
    "p90": pl.Float64, "max": pl.Float64,
}  # fmt: skip
PHASE_SCHEMA = {
    "agent": pl.String, "agent_version": pl.String, "source": pl.String, "phase": pl.String,
}  # fmt: skip


def largest_phase(a: Analysis, replays: pl.DataFrame) -> pl.DataFrame:
    """Per agent version and gap source: the leaf phase with the most time inside one gap,
    as "sdk-initialize 1,245 ms of 1,359 ms" (`phases.largest_phases`); no row when the
    agent's stderr named none."""
    phases = a.gap_phases
    rows = []
    for source in replays["source"].drop_nulls().unique(maintain_order=True).to_list():
        found = largest_phases(phases, replays.filter(pl.col("source") == source))
        for r in found.iter_rows(named=True):
            text = f"{r['phase']} {duration(r['in_gap_ms'])} of {duration(r['gap_ms'])}"
            rows.append((r["agent"], r["agent_version"], source, text))
    return pl.DataFrame(rows, schema=PHASE_SCHEMA, orient="row")


def _quantile(values: np.ndarray[Any, Any], q: int) -> float | None:
    return float(np.percentile(values, q, method="linear")) if values.size else None


def _protocols(column: pl.Series) -> str:
    found = sorted({int(p) for p in column.drop_nulls().to_list()})
    return ", ".join(f"v{p}" for p in found) or "-"


def overview(ctx: Context) -> list[Block]:
    """What was read, the headline, and the agents table with the gaps first."""
    a = ctx.a
    rows = gap_rows(a, ctx.skipped)
    traces = a.traces().filter(~pl.col("trace").is_in(ctx.skipped["trace"].implode()))
    malformed = int(traces["malformed"].sum()) if traces.height else 0
    read = (
        f"acp-trace {__version__} read {count(traces.height)} {plural(traces.height, 'trace')} "
        f"({count(malformed)} malformed {plural(malformed, 'line')}"
        + (
            f", {count(ctx.skipped.height)} {plural(ctx.skipped.height, 'file')} skipped"
            if ctx.skipped.height
            else ""
        )
        + "). Traces are named relative to the folder they share. Charts and tables name "
        "agents, sessions, methods, timings and the phases agents log to stderr only, never "
        "message contents."
    )
    shown, more = capped(ctx, rows, ctx.limits.agents, "agent row")
    columns = ["gap p50 ms", "gap p90 ms", "gap max ms", "agent", "version", "gap from",
               "largest phase in the gap", "replays", "outcomes", "traces", "protocol"]  # fmt: skip
    table_rows = [
        [r["p50"], r["p90"], r["max"], r["agent"], r["agent_version"], source_name(r["source"]),
         r["phase"], r["replays"], r["outcomes"], r["traces"], r["protocol"]]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    note = (
        'The gap: to the response from what "gap from" names: the replay_complete marker, else '
        "a vendor end-of-replay event (vendor event PATH, such as claude-agent-acp's "
        "jetbrains.air.loadReplayEnd), else the last replayed history update. "
        f"p90 from {MIN_REPLAYS[90]} replays on. "
        "Largest phase: of the phases the agent's stderr names inside a gap (a phase that holds "
        "others left out), the one with the most time in it, and that gap; - when none."
    )
    return [
        Heading(1, TITLE),
        Paragraph(headline(ctx)),
        Paragraph(read),
        Heading(2, "Agents, outcomes and gaps"),
        ctx.table(columns, table_rows, {0, 1, 2, 7, 9}),
        *more,
        Paragraph(note),
        Image("gap.png", "Replay gap per agent version"),
    ]


def agent_name(agent: str | None, version: str | None) -> str:
    """`name version`, or `unknown agent` (plain text: the renderers escape it)."""
    name = agent or "unknown agent"
    return f"{name} {version}" if version else name


def headline(ctx: Context) -> str:
    """One sentence with the answer: the replay, or how many and the slowest gap."""
    a = ctx.a
    gaps = plots.gap_table(a.replays, untimed_traces(a.timeline))
    if not a.replays.height:
        return "No replaying session/resume or session/load in these traces."
    if a.replays.height == 1:
        r = a.replays.row(0, named=True)
        who = ctx.cell(agent_name(r["agent"], r["agent_version"]))
        text = f"1 replay: {ctx.cell(r['method'])} by {who}, outcome {r['outcome']}"
        if gaps.height:
            g = gaps.row(0, named=True)
            since = "the " + gap_start(g["gap_source"])
            text += f"; gap {duration(g['gap_ms'])} from {since} to the response"
        if r["response_ms"] is not None:
            text += f"; response after {duration(r['response_ms'])}"
        return text + "."
    counts = a.replays["outcome"].value_counts(sort=True, name="n").rows()
    agents = a.replays.select("agent", "agent_version").unique().height
    requests = a.replays.select("trace", "request_id").n_unique()
    text = (
        f"{count(a.replays.height)} {plural(a.replays.height, 'replay')} (one per session, children "
        f"included) in {count(requests)} replaying {plural(requests, 'request')} of {count(agents)} agent "
        f"{plural(agents, 'version')}; outcomes: " + ", ".join(f"{o} {count(n)}" for o, n in counts)
    )
    if gaps.height:
        g = gaps.sort("gap_ms", descending=True).row(0, named=True)
        who = ctx.cell(agent_name(g["agent"], g["agent_version"]))
        text += f"; the longest gap {duration(g['gap_ms'])} ({who})"
    return text + "."
