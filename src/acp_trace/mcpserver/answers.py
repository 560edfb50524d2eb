"""What each tool answers, as rows and facts: the tables of the CLI and the report (the same
library functions, the same columns), filtered and handed to `paging.bounded`.

Every function takes the traces as they are now (`Loaded`) and the tool's arguments, and
returns the JSON text of one bounded answer. A wrong argument is a UsageError that says what
was expected; the server turns it into a tool error.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.errors import UsageError
from acp_trace.mcpserver.paging import Page, bounded
from acp_trace.mcpserver.store import Loaded
from acp_trace.quantities import count
from acp_trace.render.report.formats import DECIMALS, rows_json

SKIPPED_NOTE = "files under the folder that are no trace (read, then passed over)"


def short(loaded: Loaded, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with each `trace` named short (relative to the folder the traces share)."""
    for row in rows:
        if isinstance(row.get("trace"), str):
            row["trace"] = loaded.names.get(row["trace"], row["trace"])
    return rows


SKIPPED_SHOWN = 20


def skipped_files(loaded: Loaded) -> dict[str, Any]:
    """The files passed over (no trace, a link, not a regular file), by name and why: the
    first SKIPPED_SHOWN, and how many more (their contents are never quoted)."""
    rows = [(loaded.names.get(t, t), p) for t, p in loaded.analysis.skipped.iter_rows()]
    rows += loaded.passed_over
    return {
        "skipped_files": [{"file": t, "problem": p} for t, p in rows[:SKIPPED_SHOWN]],
        "skipped_files_left_out": max(0, len(rows) - SKIPPED_SHOWN),
    }


def only_traces(loaded: Loaded, df: pl.DataFrame, trace: str | None) -> pl.DataFrame:
    """The rows of `df` of the traces `trace` names (a name or a glob; None: all)."""
    if trace is None:
        return df
    chosen = loaded.matching([trace], "trace")
    return df.filter(pl.col("trace").is_in(chosen))


# ---------------------------------------------------------------- list_traces, summary


def list_traces(
    loaded: Loaded, page: Page, agent: str | None, protocol: int | None, trace: str | None
) -> str:
    """One row per trace, newest first: the `acp-trace summary` table with the start time,
    the replays by outcome and how the agent's process ended."""
    a = loaded.analysis
    table = only_traces(loaded, loaded.summary, trace)
    if agent is not None:
        table = table.filter(pl.col("agent").str.contains(agent, literal=True).fill_null(False))
    if protocol is not None:
        table = table.filter(pl.col("protocol") == protocol)
    outcomes = replay_outcomes(a.replays)
    rows = []
    for r in table.iter_rows(named=True):
        header = a.headers.get(r["trace"], {})
        started = header.get("started_at")
        rows.append(
            {
                "trace": r["trace"],
                "started_at": started if isinstance(started, str) else None,
                "agent": r["agent"],
                "agent_version": r["agent_version"],
                "protocol": r["protocol"],
                "client": r["client"],
                "duration_ms": None if r["duration_ms"] is None else round(r["duration_ms"], 6),
                "sessions": r["sessions"],
                "messages": r["messages"],
                "stderr_lines": r["stderr_lines"],
                "replays": outcomes.get(r["trace"], {}),
                "ended": ending(r),
                "problems": problems(r),
            }
        )
    rows.sort(key=lambda row: row["trace"])
    rows.sort(key=lambda row: row["started_at"] or "", reverse=True)  # newest first, unknown last
    head = {"traces": table.height, **skipped_files(loaded)}
    return bounded(short(loaded, rows), page, loaded.version, head)


def replay_outcomes(replays: pl.DataFrame) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for trace, outcome, n in replays.group_by("trace", "outcome").len().iter_rows():
        out.setdefault(trace, {})[outcome] = n
    return out


def ending(r: dict[str, Any]) -> str:
    """How the agent's process ended, in words."""
    kills = r["kills"] or []
    if kills:
        k = kills[-1]
        return f"ended by the recorder with signal {k['signal']} at seq {k['seq']}: {k['reason']}"
    if r["exit_code"] is not None:
        return f"exit code {r['exit_code']}"
    if r["exit_signal"] is not None:
        return f"signal {r['exit_signal']}"
    return "unknown (no exit recorded: still running, or imported from a capture)"


def problems(r: dict[str, Any]) -> list[str]:
    """What went wrong while recording or reading the trace, one sentence each."""
    out = []
    if r["malformed"]:
        out.append(f"{count(r['malformed'])} malformed lines (first: {r['malformed_lines'][:5]})")
    if r["lost_records"]:
        out.append(
            f"{count(r['lost_records'])} records lost in {count(r['lost_gaps'] or 1)} gaps of seq"
        )
    if r["dropped"]:
        out.append(f"{count(r['dropped'])} lines dropped by the tap")
    out += [f"recorder error at seq {e['seq']}: {e['message']}" for e in r["tap_errors"] or []]
    if r["trace_removed"]:
        out.append("the trace was removed while recording")
    if not r["header"]:
        out.append("no header line: the agent's command and the start time are unknown")
    return out


def summary(loaded: Loaded, page: Page) -> str:
    """The report's key facts: one sentence with the answer, the agents with their gap
    percentiles and outcomes, and the findings per rule (rows: one per agent row)."""
    from acp_trace.render.report.context import MARKDOWN, context
    from acp_trace.render.report.facts import gap_rows, headline
    from acp_trace.render.report.sections import grouped_findings

    a = loaded.analysis
    ctx = context(a, MARKDOWN)
    found = a.findings()
    rules = rows_json(grouped_findings(found).rename({"trace": "first_trace"}))
    for rule in rules:
        rule["first_trace"] = loaded.names.get(rule["first_trace"], rule["first_trace"])
    head = {
        "headline": headline(ctx),
        "traces": a.traces().height - a.skipped.height,
        "replays": a.replays.height,
        "findings_by_severity": {
            s: found.filter(pl.col("severity") == s).height for s in ("error", "warning", "info")
        },
        "findings_by_rule": rules[:30],
        "rules_left_out": max(0, len(rules) - 30),
        **skipped_files(loaded),
        "gap": "p50/p90/max: ms to the response from what its gap_source names: the "
        "replay_complete marker (marker), a vendor end-of-replay event (vendor:PATH, named "
        "vendor event PATH), or the last replayed history update (last_history); phase: the "
        "largest phase the agent's stderr names inside a gap",
    }
    rows = rows_json(gap_rows(a, a.skipped))
    return bounded(rows, page, loaded.version, head)


# ---------------------------------------------------------------- replays, findings, latency


def replays(
    loaded: Loaded,
    page: Page,
    *,
    agent: str | None,
    outcome: str | None,
    session: str | None,
    trace: str | None,
    slower_than_ms: float | None,
) -> str:
    """The replays table (the columns of `acp-trace replays --format json`), slowest
    response first, filtered."""
    table = only_traces(loaded, loaded.analysis.replays, trace)
    if agent is not None:
        table = table.filter(pl.col("agent").str.contains(agent, literal=True).fill_null(False))
    if outcome is not None:
        table = table.filter(pl.col("outcome") == outcome)
    if session is not None:
        table = table.filter((pl.col("session") == session) | (pl.col("parent_session") == session))
    if slower_than_ms is not None:
        table = table.filter(pl.col("response_ms") > slower_than_ms)
    table = table.sort("response_ms", descending=True, nulls_last=True, maintain_order=True)
    head = {"order": "slowest response first (no response last)"}
    return bounded(short(loaded, rows_json(table)), page, loaded.version, head)


def findings(
    loaded: Loaded,
    page: Page,
    *,
    rule: list[str] | None,
    min_severity: str,
    side: str | None,
    trace: str | None,
    session: str | None,
) -> str:
    """The findings of `acp-trace check` (the same columns), filtered."""
    found = only_traces(loaded, loaded.analysis.findings(rule, min_severity), trace)
    if side is not None:
        found = found.filter(pl.col("side") == side)
    if session is not None:
        found = found.filter(pl.col("session") == session)
    head = {"sides": "agent: the agent's fault; client: the client's; both: the exchange"}
    return bounded(short(loaded, rows_json(found)), page, loaded.version, head)


def latency(loaded: Loaded, page: Page, by: str) -> str:
    """`acp-trace latency --format json`: request latency per group, then the prompt-turn
    phases; each row says its `table`."""
    from acp_trace.analysis.latency import turn_phases

    a = loaded.analysis
    tables = {"requests": a.latency(by), "prompt_turns": turn_phases(a.turns, by)}
    rows = [
        {"table": name, **row}
        for name, df in tables.items()
        for row in short(loaded, rows_json(df))
    ]
    return bounded(rows, page, loaded.version, {"by": by})


# ---------------------------------------------------------------- diff


def rounded(row: dict[str, Any]) -> dict[str, Any]:
    """Floats to the six decimals of every JSON output (`formats.DECIMALS`)."""
    return {k: round(v, DECIMALS) if isinstance(v, float) else v for k, v in row.items()}


def diff(
    loaded: Loaded, page: Page, base: list[str], new: list[str], options: dict[str, Any]
) -> str:
    """`acp-trace diff --format json` of two sets of the served traces; the tables' rows
    (each with its `table`) are paged, the verdict and its sentences come first."""
    from acp_trace.analysis import analyze
    from acp_trace.analysis.diff import DiffOptions
    from acp_trace.analysis.diff import diff as compare
    from acp_trace.render.report.diff import diff_json

    a = loaded.analysis
    sides = []
    for name, patterns in (("base", base), ("new", new)):
        if not patterns:
            raise UsageError(f"{name}: expected one or more trace names or globs")
        chosen = loaded.matching(patterns, name)
        records = a.records.filter(pl.col("trace").is_in(chosen))
        sides.append(analyze(records, marker_meta=a.marker_meta, weight=a.weight))
    result = diff_json(compare(sides[0], sides[1], DiffOptions(**options)))
    tables = ("metrics", "flips", "outcomes", "findings")
    rows = [{"table": t, **rounded(row)} for t in tables for row in result[t]]
    head = {
        "regression": result["regression"],
        "regressions": result["regressions"][:20],
        "regressions_left_out": max(0, len(result["regressions"]) - 20),
        "options": result["options"],
    }
    return bounded(rows, page, loaded.version, head)
