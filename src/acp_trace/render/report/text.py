"""Text renderings for people: summaries, tables, timelines and findings (no I/O here).

Every value that comes from a trace goes through `acp_trace.render.escape.terminal`: control
characters, bidi controls and lone surrogates are shown escaped, never sent to a terminal raw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from acp_trace.analysis.phase_patterns import parse_phase
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted, fixed, ms, trimmed
from acp_trace.render.escape import terminal
from acp_trace.render.report.tables import table, to_text
from acp_trace.render.timeline_weight import NONE as NO_MARKS
from acp_trace.render.timeline_weight import WeightMarks, limit_mark, silence_mark


def format_table(
    df: pl.DataFrame,
    columns: Sequence[str] | None = None,
    width: int | None = None,
    *,
    fold: Sequence[str] | None = None,
) -> str:
    """An aligned text table (a rule under the header, no other lines: it pastes into issues),
    fitted to `width` columns (None: as wide as its content) by shortening its `fold` columns
    (default: every text column) with an ellipsis."""
    if fold is None:
        fold = [c for c in columns or df.columns if not df.schema[c].is_numeric()]
    return to_text(table(df, columns, fold=fold, width=width), width)


def format_summary(summary: pl.DataFrame, skipped: pl.DataFrame | None = None) -> str:
    """The `acp-trace summary` text: one block per trace, then the files that were skipped
    (`skipped`: `trace`, `problem`, as `acp_trace.trace.reader.skipped_inputs` lists them)."""
    out: list[str] = []
    for row in summary.iter_rows(named=True):
        out += _summary_block(row)
    if skipped is not None and skipped.height:
        out.append(
            f"skipped {counted(skipped.height, 'file')} that {_is(skipped.height)} no trace:\n"
        )
        out += [f"  {terminal(t)}: {terminal(p)}\n" for t, p in skipped.iter_rows()]
    return "".join(out)


def _is(count: int) -> str:
    return "is" if count == 1 else "are"


def _summary_block(row: dict[str, Any]) -> list[str]:
    agent = terminal(row["agent"] or "unknown agent")
    if row["agent_version"]:
        agent += f" {terminal(row['agent_version'])}"
    proto = f"v{row['protocol']}" if row["protocol"] else "unknown protocol"
    duration = ms(row["duration_ms"]) + " ms" if row["duration_ms"] is not None else "no timestamps"
    out = [
        f"{terminal(row['trace'])}\n",
        f"  agent: {agent}, {proto}, client: {terminal(row['client'] or '-')}\n",
        f"  {counted(row['messages'], 'message')}, {counted(row['sessions'], 'session')}, "
        f"{duration} ({terminal(row['timing'])}), {counted(row['stderr_lines'], 'stderr line')}\n",
    ]
    if not row["header"]:
        out.append("  no header line: the agent's command and the start time are unknown\n")
    if row["exit_code"] is not None:
        out.append(f"  agent exit code: {row['exit_code']}\n")
    elif row["exit_signal"] is not None:
        out.append(f"  agent ended by signal {row['exit_signal']}\n")
    if row["malformed"]:
        lines = ", ".join(str(n) for n in row["malformed_lines"][:20])
        more = " ..." if row["malformed"] > 20 else ""
        word = "line" if row["malformed"] == 1 else "lines"
        out.append(f"  malformed lines: {count(row['malformed'])} ({word} {lines}{more})\n")
    out += [f"  {line}\n" for line in loss_lines(row)]
    out += _tap_problem_lines(row)
    for title, key in (("methods", "by_method"), ("updates", "by_update_kind")):
        if row[key]:
            items = ", ".join(f"{terminal(d['name'])} {count(d['count'])}" for d in row[key])
            out.append(f"  {title}: {items}\n")
    return out


def _tap_problem_lines(row: dict[str, Any]) -> list[str]:
    """The recorder's errors and kills, and a trace removed while recording, one line each."""
    who = "recorder" if row.get("timing") in ("tap", None) else "importer"  # an imported trace
    lines = [
        f"  {who} error at seq {e['seq']}: {terminal(e['message'])}\n"
        for e in row.get("tap_errors") or []
    ]
    lines += [
        f"  the recorder ended the agent with signal {k['signal']} at seq {k['seq']}:"
        f" {terminal(k['reason'])}\n"
        for k in row.get("kills") or []
    ]
    if row.get("trace_removed"):
        lines.append("  the trace was removed while recording: what came after is not in it\n")
    return lines


SIDE_ORDER = ("agent", "client", "both")
SIDE_TITLES = {
    "agent": "the agent's faults",
    "client": "the client's faults",
    "both": "the exchange (either side, or the recording)",
}


def _counts(findings: pl.DataFrame) -> str:
    counts = {s: findings.filter(pl.col("severity") == s).height for s in ("error", "warning")}
    info = findings.filter(pl.col("severity") == "info").height
    return (
        f"{counted(counts['error'], 'error')}, {counted(counts['warning'], 'warning')}, "
        f"{count(info)} info"
    )


def loss_lines(row: dict[str, Any]) -> list[str]:
    """What a trace's recording lacks (a row of `summarize` or `losses`), one line each."""
    out: list[str] = []
    if row["lost_records"] or row["dropped"] or row.get("unwritten"):
        parts = []
        if row["lost_records"]:
            gaps = row.get("lost_gaps") or 1
            parts.append(f"{count(row['lost_records'])} in {counted(gaps, 'gap')}")
        if row["dropped"]:
            by = "by the tap" if row.get("timing", "tap") == "tap" else "from the source"
            parts.append(f"{count(row['dropped'])} dropped {by}")  # `from the source`: imported
        if row.get("unwritten"):
            parts.append(f"{count(row['unwritten'])} not written (the trace could not take them)")
        out.append(f"lost records: {'; '.join(parts)}")
    if row.get("ended") == "no exit":
        out.append(
            "incomplete: no `exit` event (the recorder was killed or the trace was cut short);"
            " lines after its last record are not accounted for"
        )
    elif row.get("ended") == "unbalanced":
        out.append("the recorder's account does not add up: lines may be missing silently")
    return out


def format_losses(losses: pl.DataFrame) -> str:
    """`check`'s note on traces whose recording lacks lines: what each lacks, and that no
    finding can be made about what is not there."""
    if not losses.height:
        return ""
    out = [
        f"{counted(losses.height, 'trace')} lack{'s' if losses.height == 1 else ''} part of "
        "the recording (no finding can be made about what is not there):\n"
    ]
    for row in losses.iter_rows(named=True):
        out.append(f"  {terminal(row['trace'])}: {'; '.join(loss_lines(row))}\n")
    return "".join(out)


def format_findings(findings: pl.DataFrame, traces: pl.DataFrame, skipped: int = 0) -> str:
    """`acp-trace check` text: findings grouped by side (the agent's first, then the client's,
    then those of the exchange), then by trace and session; then the counts."""
    out: list[str] = []
    for side in SIDE_ORDER:
        mine = findings.filter(pl.col("side") == side)
        if not mine.height:
            continue
        out.append(f"{SIDE_TITLES[side]}: {_counts(mine)}\n")
        for (trace,), part in mine.group_by("trace", maintain_order=True):
            out.append(f"  {terminal(str(trace))}\n")
            for (session,), group in part.group_by("session", maintain_order=True):
                out.append(f"    session {terminal(session) if session else '(none)'}\n")
                for f in group.iter_rows(named=True):
                    where = f"seq {f['seq']}" if f["seq"] is not None else "-"
                    text = terminal(f["message"])
                    out.append(f"      {f['severity']:<7} {f['rule']} at {where}: {text}\n")
    malformed = int(traces["malformed"].sum()) if traces.height else 0
    tail = f", {counted(malformed, 'malformed line')}" if malformed else ""
    tail += f", {counted(skipped, 'input')} skipped" if skipped else ""
    out.append(f"{counted(traces.height, 'trace')}, {_counts(findings)}{tail}\n")
    return "".join(out)


ARROWS = {"client": "->", "agent": "<-", "stderr": "!!", "tap": "**"}
TIMELINE_LEGEND = (
    "t ms: milliseconds since the trace started (- where there are no timestamps)\n"
    "-> client to agent   <- agent to client   !! agent stderr   ** tap event\n"
    "| inside a replay window, +-- its start and end, ^^ where a session's history ends\n"
    "[history] [live] [marker] [state]: update class; +N ms: latency; [ID]: session\n"
    "[phase NAME N ms]: a phase the agent's stderr line names (docs/analysis.md)\n"
)
WEIGHT_LEGEND = ">> a line longer than a client's limit, .. a silence past a client's deadline\n"


def _what(r: dict[str, Any]) -> str:
    kind = r["kind"]
    rid = terminal(str(r["id"]))
    if kind == "request":
        return f"{terminal(str(r['method']))} (id {rid})"
    if kind == "notification":
        if r["method"] == "session/update":
            label = terminal(r["update_kind"] or "?")
            return f"update {label}" + (f" [{r['update_class']}]" if r["update_class"] else "")
        return terminal(str(r["method"]))
    if kind in ("response", "error"):
        method = r["request_method"]
        answer = f"{terminal(method)} (id {rid})" if method else f"id {rid} (no request)"
        code = f" error {r['error_code']}" if kind == "error" else ""
        took = f" +{ms(r['latency_ms'])} ms" if r["latency_ms"] is not None else ""
        return f"response to {answer}{code}{took}"
    if kind == "event":
        return terminal(f"tap {r['event']} {r['text'] or ''}".rstrip())
    text = (r["text"] or "")[:100]
    return f"{kind}: {terminal(repr(text))}" + (_phase(r["text"]) if r["src"] == "stderr" else "")


def _phase(text: str | None) -> str:
    """` [phase NAME 1,327 ms]` when an stderr line names a phase (analysis/phases.py)."""
    phase = parse_phase(text or "")
    if phase is None:
        return ""
    return f" [phase {terminal(phase.name)} {trimmed(phase.duration_ms)} ms]"


def format_timeline(
    tl: pl.DataFrame,
    windows: list[Any],
    *,
    session: str | None = None,
    replays_only: bool = False,
    marks: WeightMarks = NO_MARKS,
) -> str:
    """The timeline for a person: a legend, then per trace a header line and one line per
    record (time, direction, seq, what, session), replay windows and markers set off; an
    stderr line that names a phase says which; `marks` (timeline_weight.weight_marks): a line
    longer than a client limit, a silence longer than a client deadline. `session` keeps that
    session's records and the agent's stderr lines inside its replay windows (stderr names no
    session)."""
    rows = tl.filter(pl.col("kind") != "header")
    if session:
        inside = _stderr_in_windows(rows, windows, session) + _window_bounds(windows, session)
        rows = rows.filter((pl.col("session") == session) | pl.col("row").is_in(inside))
    seq_width = max(3, len(str(rows["seq"].max() or 0)))
    times = rows["t_ms"].drop_nulls().to_list()
    t_width = max([10] + [len(fixed(t, 3)) for t in (min(times), max(times))] if times else [10])
    head = f"{'t ms':>{t_width}}{'':7}{'seq':>{seq_width}}  message [session]\n"
    pad = " " * (t_width + 2)  # under the window bar
    bars = _Marks(windows, marks)
    out = [TIMELINE_LEGEND + (WEIGHT_LEGEND if marks.over or marks.silences else "")]
    current = None
    for r in rows.iter_rows(named=True):
        if r["trace"] != current:
            current = r["trace"]
            out += [f"\n== {terminal(current)}\n", head]
        out += bars.lines(r, pad, seq_width, replays_only)
    return "".join(out)


def _window_bounds(windows: list[Any], session: str) -> list[int]:
    """The request and end rows of the replay windows that cover `session`: a child's own
    lines are inside its parent's window, whose bars they need."""
    return [
        row
        for w in windows
        if w.replaying and session in w.sessions
        for row in (w.req_row, w.end_row)
        if row is not None
    ]


def _stderr_in_windows(rows: pl.DataFrame, windows: list[Any], session: str) -> list[int]:
    """The rows of the stderr lines inside the replay windows that cover `session`."""
    stderr = rows.filter(pl.col("src") == "stderr").select("trace", "row")
    found: list[int] = []
    if not stderr.height:
        return found
    for w in windows:
        if not w.replaying or session not in w.sessions:
            continue
        end = w.end_row if w.end_row is not None else rows["row"].max()
        found += stderr.filter(
            pl.col("trace") == w.trace, pl.col("row") > w.req_row, pl.col("row") <= end
        )["row"].to_list()
    return found


class _Marks:
    """Where replay windows start and end and where each session's history ends, and how deep
    in windows each trace currently is."""

    def __init__(self, windows: list[Any], weight: WeightMarks = NO_MARKS) -> None:
        self.weight = weight
        replaying = [w for w in windows if w.replaying]
        self.starts = {w.req_row: w for w in replaying}
        self.ends = {w.end_row: w for w in replaying if w.end_row is not None}
        self.markers = {s.marker_row: s for w in replaying for s in w.sessions.values()}
        self.inside: dict[str, int] = {}

    def lines(self, r: dict[str, Any], pad: str, seq_width: int, replays_only: bool) -> list[str]:
        row, trace = r["row"], r["trace"]
        depth = self.inside.get(trace, 0)
        out = []
        w = self.starts.get(row)
        if w is not None:
            cursor = "" if w.method == "session/load" else f" replayFrom={_json(w.cursor)}"
            out.append(f"{pad}+-- replay window: {w.method} {terminal(w.session)}{cursor}\n")
            self.inside[trace] = depth + 1
        elif replays_only and depth == 0 and row not in self.ends:
            return []
        bar = "|" if self.inside.get(trace, 0) or row in self.ends else " "
        out += silence_mark(self.weight.silences.get(row), r["seq"], pad, bar)
        t = fixed(r["t_ms"], 3) if r["t_ms"] is not None else "-"
        who = f" [{terminal(r['session'])}]" if r["session"] else ""
        arrow = ARROWS.get(r["src"], "  ")
        out.append(
            f"{t:>{len(pad) - 2}}  {bar} {arrow} {r['seq']!s:>{seq_width}}  {_what(r)}{who}\n"
        )
        out += limit_mark(self.weight.over.get(row), pad, bar)
        stats = self.markers.get(row)
        if stats is not None:
            updates = counted(stats.history_updates, "history update")
            out.append(f"{pad}|   ^^ end of history for {terminal(stats.session)} ({updates})\n")
        ew = self.ends.get(row)
        if ew is not None:
            out.append(f"{pad}+-- end of {ew.method} {terminal(ew.session)}: {ew.end}\n")
            self.inside[trace] = max(0, self.inside.get(trace, 1) - 1)
        return out


def _json(value: Any) -> str:
    return terminal(json_text(value))  # integers beyond 64 bits too
