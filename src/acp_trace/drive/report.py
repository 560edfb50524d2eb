"""A drive's outcome as text: what was played, what differed from the recording, what got
worse. Trace text goes through render's tables and `terminal` escaping."""

from __future__ import annotations

import polars as pl

from acp_trace.drive.run import DriveOutcome
from acp_trace.quantities import count, fixed
from acp_trace.render.escape import terminal
from acp_trace.render.report.text import format_table

ARROW = " -> "


def _text(value: object) -> str:
    """A value of the comparison as a person reads it: ms to 0.1, counts with separators."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return fixed(value, 1)
    return count(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _pair(df: pl.DataFrame, name: str, label: str) -> pl.Series:
    """`RECORDED -> THIS RUN` in one text cell (just one value when both are the same)."""
    pairs = zip(df[f"recorded_{name}"].to_list(), df[f"this_run_{name}"].to_list(), strict=True)
    cells = [(_text(rec), _text(run)) for rec, run in pairs]
    return pl.Series(
        label, [rec if rec == run else rec + ARROW + run for rec, run in cells], pl.String
    )


def _requests(df: pl.DataFrame) -> pl.DataFrame:
    df = df.rename({"recorded": "recorded_answer", "this_run": "this_run_answer"})
    return df.select(
        "n",
        "method",
        pl.col("session").fill_null("-"),
        _pair(df, "answer", "answer"),
        _pair(df, "ms", "latency ms"),
    )


def _replays(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(
        pl.col("n").alias("request"),
        "session",
        _pair(df, "outcome", "outcome"),
        _pair(df, "history_updates", "history"),
        _pair(df, "gap_ms", "gap ms"),
        _pair(df, "response_ms", "response ms"),
    )


def format_drive(outcome: DriveOutcome, width: int | None = None) -> str:
    """The whole text: the run, requests, replays, findings, agent requests, notes, verdict."""
    script, result, cmp = outcome.script, outcome.play, outcome.comparison
    steps = len(script.steps)
    out = [
        f"drove {terminal(script.name)} (protocol {script.protocol}) -> {terminal(str(result.trace))}\n",
        f"client messages sent: {count(len(result.sent))} of {count(steps)}",
        f"; sessions: {_sessions(result.sessions)}\n" if result.sessions else "\n",
    ]
    if script.other_traces:
        out.append(
            f"(the recording holds {count(script.other_traces)} more traces; drove the first)\n"
        )
    out.append(f"\nRequests (recorded{ARROW}this run, where they differ):\n")
    out.append(format_table(_requests(cmp.requests), None, width))
    if cmp.replays.height:
        out.append(
            f"\nReplays (recorded{ARROW}this run; gap: the marker, else the last history"
            " update, to the response):\n"
        )
        out.append(format_table(_replays(cmp.replays), None, width))
    changed = cmp.findings.filter(pl.col("change") != "same")
    if changed.height:
        out.append("\nFindings that changed (count per rule):\n")
        out.append(
            format_table(changed, ["rule", "severity", "base_count", "new_count", "change"], width)
        )
    out += _agent_requests(outcome)
    out += [f"\nnote: {terminal(n)}\n" for n in result.notes]
    if cmp.regressions:
        out.append(f"\nRegressions against the recording ({count(len(cmp.regressions))}):\n")
        out += [f"  {terminal(r)}\n" for r in cmp.regressions]
    else:
        out.append("\nNo regression against the recording.\n")
    return "".join(out)


def _sessions(table: dict[str, str]) -> str:
    return ", ".join(f"{terminal(k)} -> {terminal(v)}" for k, v in table.items())


def _agent_requests(outcome: DriveOutcome) -> list[str]:
    result, answers = outcome.play, outcome.script.answers
    if not result.asked and not answers:
        return []
    out = ["\nAgent requests (this run asked / the recording answered):\n"]
    for method in sorted(set(result.asked) | set(answers)):
        out.append(
            f"  {terminal(method)}: {count(result.asked[method])} / {count(len(answers.get(method, [])))}\n"
        )
    out += [f"  unanswerable: {terminal(u)}\n" for u in result.unanswerable]
    return out
