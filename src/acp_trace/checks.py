"""Conformance checks: a registry of small functions, one per rule of rules.md.

Every check has the same signature, `(ctx: Context) -> Iterator[Finding]`, and reads the facts
that the timeline, the replay pass and the turn pass already found. Messages say what was
expected, what came instead, and where (trace, session, seq).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from acp_trace.jsonrpc import CANCEL_METHOD, INVALID_PARAMS, loads
from acp_trace.latency import TurnFacts
from acp_trace.replays import Facts, SessionStats, Window

SEVERITIES = ("error", "warning", "info")
FINDING_SCHEMA: dict[str, Any] = {
    "rule": pl.String,
    "severity": pl.String,
    "trace": pl.String,
    "session": pl.String,
    "seq": pl.Int64,
    "t_ms": pl.Float64,
    "message": pl.String,
}


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place."""

    rule: str
    severity: str
    trace: str
    session: str | None
    seq: int | None
    t_ms: float | None
    message: str


@dataclass
class Context:
    """What every check may read."""

    timeline: pl.DataFrame
    facts: Facts
    turns: TurnFacts
    headers: dict[str, dict[str, Any]]

    def at(
        self, rule: str, row: int, session: str | None, message: str, severity: str = ""
    ) -> Finding:
        """A finding pointing at a timeline row."""
        trace = self.timeline["trace"][row]
        return Finding(
            rule=rule,
            severity=severity or RULES[rule].severity,
            trace=trace,
            session=session,
            seq=self.timeline["seq"][row],
            t_ms=self.timeline["t_ms"][row],
            message=message,
        )

    def seq(self, row: int | None) -> str:
        """`seq N` of a row, for messages."""
        return "the end of the trace" if row is None else f"seq {self.timeline['seq'][row]}"

    def describe(self, w: Window) -> str:
        """`session/resume (id 3, seq 12)`, with the cursor for resumes."""
        cursor = "" if w.method == "session/load" else f", replayFrom {_short(w.cursor)}"
        return f"{w.method} (id {w.request_id}, {self.seq(w.req_row)}{cursor})"


@dataclass(frozen=True)
class Rule:
    """A rule of the catalogue and the function that checks it."""

    id: str
    severity: str
    summary: str
    check: Callable[[Context], Iterator[Finding]]


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: str, summary: str) -> Callable[..., Any]:
    """Register a check function under a rule id."""

    def register(
        fn: Callable[[Context], Iterator[Finding]],
    ) -> Callable[[Context], Iterator[Finding]]:
        RULES[rule_id] = Rule(rule_id, severity, summary, fn)
        return fn

    return register


def _short(value: Any) -> str:
    text = "null" if value is None else str(loads_safe(value))
    return text if len(text) <= 60 else text[:57] + "..."


def loads_safe(value: Any) -> Any:
    import orjson

    return orjson.dumps(value).decode()


def _sessions(ctx: Context, expecting: bool = True) -> Iterator[tuple[Window, SessionStats]]:
    for w in ctx.facts.windows:
        if w.replaying and (w.expects_marker or not expecting):
            for stats in w.sessions.values():
                yield w, stats


def _response(ctx: Context, w: Window) -> str:
    if w.end == "response":
        return f"a success response at {ctx.seq(w.end_row)}"
    if w.end == "error":
        return f"an error {w.error_code} at {ctx.seq(w.end_row)}"
    return "the end of the connection" if w.end == "connection" else "no response"


# ---------------------------------------------------------------- replay marker (v2)


@rule("marker-missing", "error", "a replaying v2 resume succeeded without a replay_complete marker")
def marker_missing(ctx: Context) -> Iterator[Finding]:
    late = {(m.window, m.session): m.row for m in ctx.facts.markers if m.status == "late"}
    for w, stats in _sessions(ctx):
        if stats.parent is None and w.succeeded and stats.marker_row is None:
            assert w.end_row is not None
            after = late.get((w.index, stats.session))
            tail = (
                f"; a marker came only after it, at {ctx.seq(after)}" if after is not None else ""
            )
            yield ctx.at(
                "marker-missing",
                w.end_row,
                stats.session,
                f"{ctx.describe(w)} got {_response(ctx, w)} with no replay_complete on "
                f"{stats.session} before it; expected the marker after the last replayed "
                f"update ({stats.history_updates} history updates) and before the response{tail}",
            )


def _marker_findings(
    ctx: Context, status: str, rule_id: str, text: Callable[[Any], str]
) -> Iterator[Finding]:
    for m in ctx.facts.markers:
        if m.status == status:
            row = m.row
            yield ctx.at(rule_id, row, m.session, text(m))


@rule("marker-duplicate", "error", "a second marker for a resume that already had its marker")
def marker_duplicate(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        first = w.sessions[m.session].marker_row
        return (
            f"replay_complete on {m.session} at {ctx.seq(m.row)} is a second marker: "
            f"{ctx.describe(w)} already got its marker at {ctx.seq(first)}; expected exactly one"
        )

    yield from _marker_findings(ctx, "duplicate", "marker-duplicate", text)


@rule("marker-late", "error", "a marker arrived after the response of the resume it belongs to")
def marker_late(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        return (
            f"replay_complete on {m.session} at {ctx.seq(m.row)} came after {_response(ctx, w)} "
            f"to {ctx.describe(w)}; expected it before the response"
        )

    yield from _marker_findings(ctx, "late", "marker-late", text)


@rule("marker-unexpected", "error", "a marker on a session that no open replaying resume covers")
def marker_unexpected(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        return (
            f"replay_complete on {m.session} at {ctx.seq(m.row)} while no replaying "
            f"session/resume (with replayFrom) covering {m.session} was open; markers are "
            "expected only at the end of a replay"
        )

    yield from _marker_findings(ctx, "unexpected", "marker-unexpected", text)


@rule("child-marker-before-announce", "error", "a child's marker came before its subagent_update")
def child_marker_before_announce(ctx: Context) -> Iterator[Finding]:
    def text(m: Any) -> str:
        w = ctx.facts.windows[m.window]
        announce = w.sessions[m.session].announce_row
        return (
            f"replay_complete on child {m.session} at {ctx.seq(m.row)} came before the "
            f"subagent_update announcing it at {ctx.seq(announce)} in {ctx.describe(w)}; "
            "expected the child's marker after its announcement"
        )

    yield from _marker_findings(ctx, "before_announce", "child-marker-before-announce", text)


@rule("marker-with-rejection", "error", "a marker in the window of a resume answered -32602")
def marker_with_rejection(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if w.end == "error" and w.error_code == INVALID_PARAMS and stats.marker_row is not None:
            yield ctx.at(
                "marker-with-rejection",
                stats.marker_row,
                stats.session,
                f"replay_complete on {stats.session} at {ctx.seq(stats.marker_row)}, but "
                f"{ctx.describe(w)} was then rejected with -32602 at {ctx.seq(w.end_row)}; "
                "a rejected cursor replays nothing and sends no marker",
            )


def _was_active(ctx: Context, w: Window, stats: SessionStats) -> bool:
    return stats.was_active


@rule("live-before-marker", "error", "a live-only update before the session's marker")
def live_before_marker(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if stats.marker_row is None:
            continue
        severity = "warning" if _was_active(ctx, w, stats) else "error"
        for row in stats.live_rows:
            if row < stats.marker_row:
                kind = ctx.timeline["update_kind"][row]
                yield ctx.at(
                    "live-before-marker",
                    row,
                    stats.session,
                    f"{kind} on {stats.session} at {ctx.seq(row)} came before its "
                    f"replay_complete at {ctx.seq(stats.marker_row)} in {ctx.describe(w)}; "
                    "live updates must wait until after the marker"
                    + (
                        " (the session was already active, so: warning)"
                        if severity == "warning"
                        else ""
                    ),
                    severity,
                )


@rule("request-before-marker", "warning", "a permission or elicitation request before the marker")
def request_before_marker(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        if stats.marker_row is None:
            continue
        for row in stats.request_rows:
            if row < stats.marker_row:
                method = ctx.timeline["method"][row]
                yield ctx.at(
                    "request-before-marker",
                    row,
                    stats.session,
                    f"{method} for {stats.session} at {ctx.seq(row)} came before its "
                    f"replay_complete at {ctx.seq(stats.marker_row)} in {ctx.describe(w)}; "
                    "agent requests should wait until the replay is complete",
                )


@rule("child-marker-missing", "error", "an announced child has no marker before a success response")
def child_marker_missing(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx):
        if stats.parent is not None and w.succeeded and stats.marker_row is None:
            assert w.end_row is not None
            yield ctx.at(
                "child-marker-missing",
                w.end_row,
                stats.session,
                f"child {stats.session}, announced at {ctx.seq(stats.announce_row)} in "
                f"{ctx.describe(w)}, got no replay_complete before {_response(ctx, w)}; "
                "expected one on the child's own sessionId",
            )


@rule("concurrent-replay", "warning", "a second replaying resume of a session while one is pending")
def concurrent_replay(ctx: Context) -> Iterator[Finding]:
    for row, index in ctx.facts.concurrent:
        w = ctx.facts.windows[index]
        method = ctx.timeline["method"][row]
        yield ctx.at(
            "concurrent-replay",
            row,
            w.session,
            f"{method} of {w.session} at {ctx.seq(row)} was sent while {ctx.describe(w)} "
            "was still pending; markers carry no request id, so both replays are ambiguous",
        )


@rule("state-snapshot-missing", "error", "a successful v2 session/resume sent no state_update")
def state_snapshot_missing(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        if w.method == "session/resume" and w.v2 and w.succeeded and stats.state_row is None:
            assert w.end_row is not None
            yield ctx.at(
                "state-snapshot-missing",
                w.end_row,
                w.session,
                f"{ctx.describe(w)} got {_response(ctx, w)} with no state_update on "
                f"{w.session} before it; every successful v2 resume sends a state snapshot",
            )


@rule("replay-without-cursor", "warning", "a resume without cursor replayed history")
def replay_without_cursor(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        stats = w.sessions[w.session]
        if w.method != "session/resume" or w.replaying or w.was_active:
            continue
        if stats.first_history_row is not None:
            what = "a v2 session/resume without replayFrom" if w.v2 else "a v1 session/resume"
            yield ctx.at(
                "replay-without-cursor",
                stats.first_history_row,
                w.session,
                f"{ctx.describe(w)} is {what} on a session not active on the connection, "
                f"yet history ({ctx.timeline['update_kind'][stats.first_history_row]}) came "
                f"at {ctx.seq(stats.first_history_row)}; it must not replay",
            )


@rule("message-id-missing", "error", "a replayed v2 message has no messageId")
def message_id_missing(ctx: Context) -> Iterator[Finding]:
    for w, stats in _sessions(ctx, expecting=False):
        rows = [
            r for r in stats.missing_id_rows if stats.marker_row is None or r < stats.marker_row
        ]
        if w.v2 and rows:
            kind = ctx.timeline["update_kind"][rows[0]]
            more = f" (and {len(rows) - 1} more in this replay)" if len(rows) > 1 else ""
            yield ctx.at(
                "message-id-missing",
                rows[0],
                stats.session,
                f"replayed {kind} on {stats.session} at {ctx.seq(rows[0])} in "
                f"{ctx.describe(w)} has no messageId{more}; v2 replayed messages must carry one",
            )


@rule("load-updates-after-response", "error", "history arrived after a v1 load's response")
def load_updates_after_response(ctx: Context) -> Iterator[Finding]:
    for index, rows in ctx.facts.load_after:
        w = ctx.facts.windows[index]
        yield ctx.at(
            "load-updates-after-response",
            rows[0],
            w.session,
            f"{len(rows)} history updates on {w.session} came after the success response "
            f"to {ctx.describe(w)} at {ctx.seq(w.end_row)}, the first at {ctx.seq(rows[0])}; "
            "session/load must replay the whole history before it responds",
        )


# ---------------------------------------------------------------- JSON-RPC and stdio


@rule(
    "non-json-line", "error", "a line on the agent's stdout or the client's stdin is not JSON-RPC"
)
def non_json_line(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    bad = tl.filter(
        pl.col("src").is_in(["agent", "client"])
        & pl.col("kind").is_in(["text", "b64", "invalid"])
        & ~pl.col("truncated").fill_null(False)
    ).unique(["trace", "seq"], keep="first", maintain_order=True)
    for row, src, kind, text, msg in bad.select("row", "src", "kind", "text", "msg").iter_rows():
        if kind == "text" and not text.strip():
            continue
        stream = "the agent's stdout" if src == "agent" else "the client's stdin (to the agent)"
        what = {
            "text": "is not JSON",
            "b64": "is not UTF-8 text",
            "invalid": "is JSON but not a JSON-RPC 2.0 message",
        }[kind]
        sample = (text if kind == "text" else msg or text or "")[:80]
        yield ctx.at(
            "non-json-line",
            row,
            tl["session"][row],
            f"a line on {stream} at {ctx.seq(row)} {what}: {sample!r}; expected one "
            "JSON-RPC 2.0 message (or a non-empty array of them) per line",
        )


@rule("unanswered-request", "warning", "a request has no response when the trace ends")
def unanswered_request(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    pending = tl.filter((pl.col("kind") == "request") & pl.col("peer_row").is_null())
    for row, src, method, mid, session in pending.select(
        "row", "src", "method", "id", "session"
    ).iter_rows():
        yield ctx.at(
            "unanswered-request",
            row,
            session,
            f"{method} (id {mid}) sent by the {src} at {ctx.seq(row)} got no response "
            "before the trace ended",
        )


@rule("orphan-response", "warning", "a response answers no pending request of the other side")
def orphan_response(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    for row, src, mid, session in (
        tl.filter(pl.col("orphan").fill_null(False))
        .select("row", "src", "id", "session")
        .iter_rows()
    ):
        other = "client" if src == "agent" else "agent"
        yield ctx.at(
            "orphan-response",
            row,
            session,
            f"a response with id {mid} from the {src} at {ctx.seq(row)} matches no pending "
            f"request of the {other}; expected a reply only to an open request",
        )


@rule("duplicate-request-id", "warning", "a sender reuses the id of its own pending request")
def duplicate_request_id(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    dup = tl.filter((pl.col("kind") == "request") & pl.col("duplicate_id").fill_null(False))
    for row, src, method, mid, session in dup.select(
        "row", "src", "method", "id", "session"
    ).iter_rows():
        yield ctx.at(
            "duplicate-request-id",
            row,
            session,
            f"{method} from the {src} at {ctx.seq(row)} reuses id {mid} while an earlier "
            "request with that id is still pending; ids must be unique per sender",
        )


@rule("cancel-unanswered", "error", "a cancelled request never got a response")
def cancel_unanswered(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    requests = tl.filter(pl.col("kind") == "request").select(
        "row", "trace", "src", "id", "method", "peer_row"
    )
    index: dict[tuple[str, str, str], list[tuple[int, str, int | None]]] = {}
    for row, trace, src, mid, method, peer in requests.iter_rows():
        index.setdefault((trace, src, mid), []).append((row, method, peer))
    cancels = tl.filter(pl.col("method") == CANCEL_METHOD).select(
        "row", "trace", "src", "msg", "session"
    )
    for row, trace, src, msg, session in cancels.iter_rows():
        params = loads(msg).get("params") or {}
        target = params.get("requestId") if isinstance(params, dict) else None
        import orjson

        key = (trace, src, orjson.dumps(target).decode())
        earlier = [c for c in index.get(key, []) if c[0] < row]
        if earlier and earlier[-1][2] is None:
            req_row, method, _ = earlier[-1]
            yield ctx.at(
                "cancel-unanswered",
                row,
                session or tl["session"][req_row],
                f"$/cancel_request at {ctx.seq(row)} cancelled {method} (id {target}, "
                f"{ctx.seq(req_row)}), which never got a response; a cancelled request "
                "must still be answered (-32800 when it stops)",
            )


# ---------------------------------------------------------------- claude-agent-acp profile


@rule("acceptance-duplicate", "warning", "more than one acceptance update for one prompt")
def acceptance_duplicate(ctx: Context) -> Iterator[Finding]:
    for turn in ctx.turns.turns:
        for row in turn.acceptance_rows[1:]:
            yield ctx.at(
                "acceptance-duplicate",
                row,
                turn.session,
                f"a second session-materialization 'accepted' update at {ctx.seq(row)} for "
                f"the session/prompt at {ctx.seq(turn.req_row)} (first at "
                f"{ctx.seq(turn.acceptance_rows[0])}); expected once per prompt",
            )


@rule("acceptance-carries-info", "warning", "the acceptance update carries title or updatedAt")
def acceptance_carries_info(ctx: Context) -> Iterator[Finding]:
    for _trace, session, row in ctx.turns.acceptance_info:
        yield ctx.at(
            "acceptance-carries-info",
            row,
            session,
            f"the session-materialization 'accepted' update at {ctx.seq(row)} also carries "
            "title or updatedAt; expected a bare acceptance signal",
        )


@rule("acceptance-outside-prompt", "warning", "an acceptance update with no prompt turn under way")
def acceptance_outside_prompt(ctx: Context) -> Iterator[Finding]:
    for _trace, session, row in ctx.turns.stray_acceptances:
        yield ctx.at(
            "acceptance-outside-prompt",
            row,
            session,
            f"a session-materialization 'accepted' update on {session} at {ctx.seq(row)} "
            "came while no prompt turn was under way; expected it only during a turn",
        )


@rule("uuid-on-cancelled", "warning", "a cancelled turn names an assistantMessageUuid")
def uuid_on_cancelled(ctx: Context) -> Iterator[Finding]:
    for turn in ctx.turns.turns:
        if turn.cancelled_with_uuid and turn.end_row is not None:
            yield ctx.at(
                "uuid-on-cancelled",
                turn.end_row,
                turn.session,
                f"the turn of the session/prompt at {ctx.seq(turn.req_row)} ended cancelled "
                f"at {ctx.seq(turn.end_row)} but carries _meta.claudeCode.assistantMessageUuid; "
                "a cancelled turn names none",
            )


# ---------------------------------------------------------------- importers


@rule("import-ambiguous-direction", "info", "an imported message's direction had to be guessed")
def import_ambiguous_direction(ctx: Context) -> Iterator[Finding]:
    for trace, head in ctx.headers.items():
        for item in head.get("ambiguous") or []:
            if not isinstance(item, dict):
                continue
            seq = item.get("seq") if isinstance(item.get("seq"), int) else None
            yield Finding(
                rule="import-ambiguous-direction",
                severity="info",
                trace=trace,
                session=None,
                seq=seq,
                t_ms=None,
                message=(
                    f"the direction of the message at seq {seq} (source line {item.get('line')}) "
                    f"could not be inferred from the protocol: {item.get('reason')}; "
                    "ordering rules treat it as the importer guessed"
                ),
            )


# ---------------------------------------------------------------- running them


def run_checks(
    ctx: Context, rules: list[str] | None = None, min_severity: str = "info"
) -> pl.DataFrame:
    """Run the selected rules (all by default) and return findings at or above min_severity."""
    allowed = SEVERITIES[: SEVERITIES.index(min_severity) + 1]
    findings: list[Finding] = []
    for rule_id in rules or list(RULES):
        findings.extend(f for f in RULES[rule_id].check(ctx) if f.severity in allowed)
    frame = pl.DataFrame([f.__dict__ for f in findings], schema=FINDING_SCHEMA)
    return frame.sort(["trace", "seq", "rule"], nulls_last=True, maintain_order=True)
