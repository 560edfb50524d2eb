"""Findings that rest on an importer's guess: downgraded, and said so (docs/importing.md).

An importer records what it had to guess in the converted trace's header: `ambiguous` lists
the records whose direction the protocol did not decide (bare JSON-RPC, acpx), and
`error_code_unknown` the error responses whose code the source did not keep (sacp-conductor
<= 10). A guessed direction must never produce an error finding: `downgrade` turns every error
that depends on a guessed record into a warning whose message says which guess it rests on.
A finding depends on a guessed record G when

- its own record is G, or the request or response paired with it is G (`row`);
- it judges a replay window (a rule of replay_rules) and G lies in that window's span: from
  the request to its response, or to the finding's own record when that comes later (a late
  marker, history after a load's response), or to the end of the trace when no response came
  (`window`);
- it is about request/response pairing (unanswered-request, orphan-response,
  duplicate-request-id, cancel-unanswered) and G carries the same JSON-RPC id, or is a
  `$/cancel_request` naming it (`id`).

Warnings that depend on a guess keep their severity and get the same note; info findings are
left as they are. An `unanswered-request` whose answer would come from a side whose responses
the source does not trace (header `responses_not_traced_from`: thinkwell's client) is made info
and says so: the trace cannot show that answer. `import-unknown-error-code` says where an error's code is unknown, so that a
replay answered with it is not silently `truncated` when the code might be -32602.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from acp_trace.analysis.checks.registry import ADJUSTERS, RULES, Context, Finding, rule
from acp_trace.jsonrpc import CANCEL_METHOD, cancelled_key, other_side
from acp_trace.trace.format import header_items

PAIRING_RULES = (
    "unanswered-request",
    "orphan-response",
    "duplicate-request-id",
    "cancel-unanswered",
)
WINDOW_MODULE = "acp_trace.analysis.checks.replay_rules"


@dataclass(frozen=True)
class Guess:
    """One guessed record of a trace: its row, the ids it carries, why it is a guess."""

    row: int
    ids: frozenset[str]
    reason: str


def guesses(ctx: Context) -> dict[str, list[Guess]]:
    """The guessed records of each trace, from the headers' `ambiguous` lists."""
    tl = ctx.timeline
    out: dict[str, list[Guess]] = {}
    for trace, head in ctx.headers.items():
        items = header_items(head, "ambiguous")
        seqs = {i.get("seq"): str(i.get("reason")) for i in items if isinstance(i.get("seq"), int)}
        if not seqs:
            continue
        rows = tl.filter(pl.col("trace") == trace, pl.col("seq").is_in(list(seqs)))
        for row, seq, mid, method, msg in rows.select("row", "seq", "id", "method", "msg").rows():
            ids = {mid} if mid is not None else set()
            if method == CANCEL_METHOD:
                ids |= _cancelled(msg)
            out.setdefault(trace, []).append(Guess(row, frozenset(ids), seqs[seq]))
    return out


def _cancelled(msg: str | None) -> set[str]:
    """The id a `$/cancel_request` names, as the timeline writes ids (exact at any size)."""
    key = cancelled_key(msg)
    return set() if key is None else {key}


def _rows_of(ctx: Context, finding: Finding) -> list[int]:
    tl = ctx.timeline
    if finding.seq is None:
        return []
    hit = tl.filter(pl.col("trace") == finding.trace, pl.col("seq") == finding.seq)
    return hit["row"].to_list()


def _windows_judged(ctx: Context, finding: Finding, row: int) -> list[tuple[int, int]]:
    """The spans (first row, last row) of the replay windows a finding at `row` judges."""
    rows = ctx.timeline.filter(pl.col("trace") == finding.trace)["row"]
    last = int(rows[-1]) if len(rows) else row
    spans = []
    extra = {m.window for m in ctx.facts.markers if m.row == row and m.window is not None}
    extra |= {i for i, rows in ctx.facts.load_after if row in rows}
    extra |= {i for r, i in ctx.facts.concurrent if r == row}
    for w in ctx.facts.windows:
        if w.trace != finding.trace:
            continue
        end = w.end_row if w.end_row is not None else last
        inside = w.req_row <= row <= end and (
            finding.session is None or finding.session in w.sessions
        )
        if inside or w.index in extra:
            spans.append((w.req_row, max(end, row)))
    return spans


def depends_on(ctx: Context, finding: Finding, mine: list[Guess]) -> Guess | None:
    """The guess a finding depends on (see the module's docstring), or None."""
    rows = _rows_of(ctx, finding)
    if not rows or not mine:
        return None
    tl = ctx.timeline
    guessed = {g.row: g for g in mine}
    for row in rows:
        peer = tl["peer_row"][row]
        for r in (row, peer):
            if r is not None and r in guessed:
                return guessed[r]
    if RULES[finding.rule].check.__module__ == WINDOW_MODULE:
        for row in rows:
            for first, last in _windows_judged(ctx, finding, row):
                hit = next((g for g in mine if first <= g.row <= last), None)
                if hit is not None:
                    return hit
    if finding.rule in PAIRING_RULES:
        ids = {tl["id"][r] for r in rows if tl["id"][r] is not None}
        for r in rows:
            if tl["method"][r] == CANCEL_METHOD:
                ids |= _cancelled(tl["msg"][r])
        return next((g for g in mine if g.ids & ids), None)
    return None


def downgrade(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """Findings with every error that depends on a guessed record made a warning, and noted."""
    table = guesses(ctx)
    untraced = {t: h["responses_not_traced_from"] for t, h in ctx.headers.items()
                if isinstance(h.get("responses_not_traced_from"), list)}  # fmt: skip
    if not table and not untraced:
        return findings
    out = []
    for f in findings:
        if f.rule == "unanswered-request" and _untraced_answer(ctx, f, untraced.get(f.trace)):
            note = "; the source does not trace the responses its sender's peer writes"
            out.append(replace(f, severity="info", message=f.message + note))
            continue
        guess = depends_on(ctx, f, table.get(f.trace, [])) if f.severity != "info" else None
        if guess is None:
            out.append(f)
            continue
        seq = ctx.timeline["seq"][guess.row]
        was = " (an error, made a warning)" if f.severity == "error" else ""
        note = (
            f"; this rests on a direction the importer guessed at seq {seq} ({guess.reason}){was}"
        )
        out.append(replace(f, severity="warning", message=f.message + note))
    return out


ADJUSTERS.append(downgrade)


def _untraced_answer(ctx: Context, finding: Finding, sides: list[str] | None) -> bool:
    """True when the answer to the finding's request would come from a side whose responses
    the source does not trace (thinkwell does not trace the client's responses)."""
    if not sides:
        return False
    rows = _rows_of(ctx, finding)
    return any(other_side(ctx.timeline["src"][r]) in sides for r in rows)


@rule(
    "import-unknown-error-code",
    "info",
    "an imported error response whose code was not recorded",
    side="both",
)
def import_unknown_error_code(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    for trace, head in ctx.headers.items():
        for item in header_items(head, "error_code_unknown"):
            if not isinstance(item.get("seq"), int):
                continue
            hit = tl.filter(pl.col("trace") == trace, pl.col("seq") == item["seq"])
            if hit.is_empty():
                continue
            row = hit["row"][0]
            peer = tl["peer_row"][row]
            answers = (
                f" answering {tl['method'][peer]} at seq {tl['seq'][peer]}"
                if peer is not None
                else ""
            )
            yield ctx.at(
                "import-unknown-error-code",
                row,
                tl["session"][row],
                f"the error response at seq {item['seq']} (source line {item.get('line')})"
                f"{answers} has no code: the source kept only its message "
                f"{_quoted(item.get('message'))}; outcomes that depend on the code (a -32602 "
                "answer to a replaying resume is `rejected`, another code `truncated`) take it "
                "as a code other than -32602",
            )


def _quoted(text: Any) -> str:
    if not isinstance(text, str):
        return "(none)"
    return repr(text if len(text) <= 80 else text[:77] + "...")
