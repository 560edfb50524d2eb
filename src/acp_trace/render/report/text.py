"""Text renderings for people: summaries, tables, timelines and findings (no I/O here)."""

from __future__ import annotations

import re
from typing import Any

import orjson
import polars as pl


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def format_table(df: pl.DataFrame, columns: list[str] | None = None) -> str:
    """A plain aligned text table (no truncation, no box drawing: it pastes into issues)."""
    columns = columns or df.columns
    cells = [[_fmt(v) for v in row] for row in df.select(columns).iter_rows()]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def format_summary(summary: pl.DataFrame) -> str:
    """The `acp-trace summary` text: one block per trace."""
    out: list[str] = []
    for row in summary.iter_rows(named=True):
        agent = row["agent"] or "unknown agent"
        if row["agent_version"]:
            agent += f" {row['agent_version']}"
        proto = f"v{row['protocol']}" if row["protocol"] else "unknown protocol"
        duration = (
            _fmt(row["duration_ms"]) + " ms" if row["duration_ms"] is not None else "no timestamps"
        )
        out.append(f"{row['trace']}\n")
        out.append(f"  agent: {agent}, {proto}, client: {row['client'] or '-'}\n")
        out.append(
            f"  {row['messages']} messages, {row['sessions']} sessions, {duration}"
            f" ({row['timing']}), {row['stderr_lines']} stderr lines\n"
        )
        if not row["header"]:
            out.append("  no header line: the agent's command and the start time are unknown\n")
        if row["exit_code"] is not None:
            out.append(f"  agent exit code: {row['exit_code']}\n")
        elif row["exit_signal"] is not None:
            out.append(f"  agent ended by signal {row['exit_signal']}\n")
        if row["malformed"]:
            lines = ", ".join(str(n) for n in row["malformed_lines"][:20])
            more = " ..." if row["malformed"] > 20 else ""
            out.append(f"  malformed lines: {row['malformed']} (line {lines}{more})\n")
        if row["lost_records"] or row["dropped"]:
            out.append(
                f"  lost records: {row['lost_records']} seq gaps, {row['dropped']} dropped by the tap\n"
            )
        for title, key in (("methods", "by_method"), ("updates", "by_update_kind")):
            if row[key]:
                items = ", ".join(f"{d['name']} {d['count']}" for d in row[key])
                out.append(f"  {title}: {items}\n")
    return "".join(out)


SIDE_ORDER = ("agent", "client", "both")
SIDE_TITLES = {
    "agent": "the agent's faults",
    "client": "the client's faults",
    "both": "the exchange (either side, or the recording)",
}
_UNSAFE_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _term(text: str) -> str:
    """Trace text made safe for a terminal: control characters, bidi overrides and lone
    surrogates shown as escapes (`\\x1b`, `\\u202e`) instead of acting."""
    return _UNSAFE_TEXT.sub(lambda m: _escape_char(m.group()), text)


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _counts(findings: pl.DataFrame) -> str:
    counts = {s: findings.filter(pl.col("severity") == s).height for s in ("error", "warning")}
    info = findings.filter(pl.col("severity") == "info").height
    return (
        f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, {info} info"
    )


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
            out.append(f"  {_term(str(trace))}\n")
            for (session,), group in part.group_by("session", maintain_order=True):
                out.append(f"    session {_term(session) if session else '(none)'}\n")
                for f in group.iter_rows(named=True):
                    where = f"seq {f['seq']}" if f["seq"] is not None else "-"
                    text = _term(f["message"])
                    out.append(f"      {f['severity']:<7} {f['rule']} at {where}: {text}\n")
    malformed = int(traces["malformed"].sum()) if traces.height else 0
    tail = f", {_plural(malformed, 'malformed line')}" if malformed else ""
    tail += f", {_plural(skipped, 'input')} skipped" if skipped else ""
    out.append(f"{_plural(traces.height, 'trace')}, {_counts(findings)}{tail}\n")
    return "".join(out)


ARROWS = {"client": "->", "agent": "<-", "stderr": "!!", "tap": "**"}


def _what(r: dict[str, Any]) -> str:
    kind = r["kind"]
    if kind == "request":
        return f"{r['method']} (id {r['id']})"
    if kind == "notification":
        if r["method"] == "session/update":
            label = r["update_kind"] or "?"
            return f"update {label}" + (f" [{r['update_class']}]" if r["update_class"] else "")
        return str(r["method"])
    if kind in ("response", "error"):
        answer = (
            f"{r['request_method']} (id {r['id']})"
            if r["request_method"]
            else f"id {r['id']} (no request)"
        )
        code = f" error {r['error_code']}" if kind == "error" else ""
        took = f" +{r['latency_ms']:.1f} ms" if r["latency_ms"] is not None else ""
        return f"response to {answer}{code}{took}"
    if kind == "event":
        return f"tap {r['event']} {r['text'] or ''}".rstrip()
    text = (r["text"] or "")[:100]
    return f"{kind}: {text!r}"


def format_timeline(
    tl: pl.DataFrame,
    windows: list[Any],
    *,
    session: str | None = None,
    replays_only: bool = False,
) -> str:
    """The timeline for a person: time, direction, what, session; replay windows set off."""
    starts = {w.req_row: w for w in windows if w.replaying}
    ends = {w.end_row: w for w in windows if w.replaying and w.end_row is not None}
    markers = {s.marker_row: (w, s) for w in windows if w.replaying for s in w.sessions.values()}
    inside: dict[str, int] = {}
    out: list[str] = []
    rows = tl.filter(pl.col("kind") != "header")
    if session:
        rows = rows.filter(pl.col("session") == session)
    current = None
    for r in rows.iter_rows(named=True):
        if r["trace"] != current:
            current = r["trace"]
            out.append(f"== {current}\n")
        row = r["row"]
        depth = inside.get(r["trace"], 0)
        w = starts.get(row)
        if w is not None:
            cursor = (
                ""
                if w.method == "session/load"
                else f" replayFrom={orjson.dumps(w.cursor).decode()}"
            )
            out.append(f"{'':>10}  +-- replay window: {w.method} {w.session}{cursor}\n")
            inside[r["trace"]] = depth + 1
        elif replays_only and depth == 0 and row not in ends:
            continue
        bar = "|" if inside.get(r["trace"], 0) or row in ends else " "
        t = f"{r['t_ms']:.1f}" if r["t_ms"] is not None else "-"
        who = f" [{r['session']}]" if r["session"] else ""
        out.append(f"{t:>10}  {bar} {ARROWS.get(r['src'], '  ')} seq {r['seq']}: {_what(r)}{who}\n")
        if row in markers:
            _window, stats = markers[row]
            out.append(
                f"{'':>10}  |   ^^ end of history for {stats.session} "
                f"({stats.history_updates} history updates)\n"
            )
        if row in ends:
            ew = ends[row]
            out.append(f"{'':>10}  +-- end of {ew.method} {ew.session}: {ew.end}\n")
            inside[r["trace"]] = max(0, inside.get(r["trace"], 1) - 1)
    return "".join(out)
