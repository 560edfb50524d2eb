"""Marker findings in a window where the recorder lost records (rules.md, "Vendor end-of-replay
events", last paragraph): a `dropped` event (lines the tap's queue could not take) or a record
cut there can hide a marker, so a recorder's loss is never reported as the agent's error.

A finding of a rule about markers (`MARKER_RULES`) is *qualified* when records of the
protocol streams (the agent's stdout, the client's stdin; stderr cannot hide a marker) were
lost in a window it judges: from the request to its response (or to the finding's own record
when that comes later, or to the end of the trace), as `guesses` spans them. A marker that
matched no window (`marker-unexpected`) is judged over the span from the last client request
for its session (the start of the trace when none) to the marker: the lost records could be
the request or the announcement that would have covered it. Qualified, the message says how
many records were lost there and the severity is at most a warning.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from acp_trace.analysis.checks.guesses import _rows_of, _windows_judged
from acp_trace.analysis.checks.registry import ADJUSTERS, Context, Finding
from acp_trace.jsonrpc import as_dict, as_int, loads
from acp_trace.quantities import count

MARKER_RULES = frozenset(
    {
        "marker-missing",
        "marker-duplicate",
        "marker-late",
        "marker-unexpected",
        "marker-with-rejection",
        "live-before-marker",
        "request-before-marker",
        "child-marker-missing",
        "child-marker-before-announce",
        "suggestions-in-replay",
    }
)


def losses(tl: pl.DataFrame) -> dict[str, list[tuple[int, int, str]]]:
    """Per trace, the records lost on the protocol streams: (row, how many, `dropped` or
    `cut`), in row order."""
    lost = tl.filter(
        ((pl.col("kind") == "event") & (pl.col("event") == "dropped"))
        | (pl.col("truncated").fill_null(False) & pl.col("src").is_in(["agent", "client"]))
        | (pl.col("kind") == "malformed")
    ).select("row", "trace", "kind", "text")
    out: dict[str, list[tuple[int, int, str]]] = {}
    for row, trace, kind, text in lost.iter_rows():
        if kind == "event":
            try:
                detail = as_dict(loads(text or "{}"))
            except ValueError:
                detail = {}
            if detail.get("stream") == "stderr":
                continue
            number = as_int(detail.get("count"))
            out.setdefault(trace, []).append(
                (row, number if number and number > 0 else 1, "dropped")
            )
        else:
            out.setdefault(trace, []).append((row, 1, "cut"))
    return out


def _spans(ctx: Context, finding: Finding, row: int) -> list[tuple[int, int]]:
    spans = _windows_judged(ctx, finding, row)
    if spans or finding.rule != "marker-unexpected":
        return spans
    tl = ctx.timeline
    asked = tl.filter(
        (pl.col("trace") == finding.trace)
        & (pl.col("kind") == "request")
        & (pl.col("src") == "client")
        & (pl.col("session") == finding.session)
        & (pl.col("row") < row)
    )["row"]
    first = tl.filter(pl.col("trace") == finding.trace)["row"]
    start = int(asked[-1]) if len(asked) else int(first[0])
    return [(start, row)]


def qualify(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """Marker findings of windows with lost records made at most warnings, and said so."""
    table = losses(ctx.timeline)
    if not table:
        return findings
    out = []
    for f in findings:
        mine = table.get(f.trace)
        if f.rule not in MARKER_RULES or not mine:
            out.append(f)
            continue
        spans = [s for row in _rows_of(ctx, f) for s in _spans(ctx, f, row)]
        hit = {(r, n, how) for r, n, how in mine for a, b in spans if a <= r <= b}
        if not hit:
            out.append(f)
            continue
        dropped = sum(n for _r, n, how in hit if how == "dropped")
        cut = sum(n for _r, n, how in hit if how == "cut")
        parts = [f"{count(dropped)} dropped"] if dropped else []
        parts += [f"{cut} cut"] if cut else []
        was = " (an error, made a warning)" if f.severity == "error" else ""
        note = (
            f"; the recorder lost {count(dropped + cut)} records in this window ({', '.join(parts)}): "
            f"the marker may be among them{was}"
        )
        severity = "warning" if f.severity == "error" else f.severity
        out.append(replace(f, severity=severity, message=f.message + note))
    return out


ADJUSTERS.append(qualify)
