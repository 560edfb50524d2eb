"""Rules of replay weight (rules.md "Replay weight, client limits and deadlines"): what a
client with a known line limit, a known deadline or a quiet-window guess would have suffered."""

from __future__ import annotations

from collections.abc import Iterator

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.analysis.replay_weight import new_session_silences
from acp_trace.quantities import count, counted, duration
from acp_trace.weight import Threshold
from acp_trace.weight.limits import over_limits

_SIDE = {"agent": "the agent's stdout", "client": "the client's stdin"}


def _limit(t: Threshold) -> str:
    """`16 MiB (16,777,216 bytes: Effect's ndjson ...)`."""
    return f"{t.name} ({count(int(t.value))} bytes: {t.clients})"


@rule("frame-over-client-limit", "warning", "a line longer than a known client limit", "both")
def frame_over_client_limit(ctx: Context) -> Iterator[Finding]:
    for o in over_limits(ctx.timeline, ctx.weight, ctx.lines):
        many = "" if o.lines == 1 else f", the longest {count(o.longest_bytes)} bytes"
        message = (
            f"expected every line on {_SIDE[o.side]} to be at most {_limit(o.limit)}; "
            f"{counted(o.lines, 'line')} passed it, the first at {ctx.seq(o.first_row)} "
            f"({o.first_kind}, {count(o.first_bytes)} bytes){many}"
        )
        session = ctx.timeline["session"][o.first_row]
        yield ctx.at("frame-over-client-limit", o.first_row, session, message, side=o.side)


@rule(
    "silence-past-client-deadline",
    "info",
    "a silence inside a replay or session/new window longer than a known client deadline",
)
def silence_past_client_deadline(ctx: Context) -> Iterator[Finding]:
    seen: set[int] = set()
    windows = [w for w in ctx.facts.windows if w.replaying]
    weights = iter(ctx.weights)
    for w in windows:
        first = None
        for _ in w.sessions:
            found = next(weights)
            first = first or found
        if first is None or w.req_row in seen:
            continue
        seen.add(w.req_row)
        yield from _silence(ctx, w.req_row, w.session, first.longest_silence_ms, ctx.describe(w))
    for row, silence in new_session_silences(ctx.timeline, ctx.lines):
        what = f"session/new ({ctx.seq(row)})"
        yield from _silence(ctx, row, None, silence, what)


def _silence(
    ctx: Context, row: int, session: str | None, silence: float | None, what: str
) -> Iterator[Finding]:
    deadline = None if silence is None else ctx.weight.largest_deadline_passed(silence)
    if deadline is None or silence is None:
        return
    message = (
        f"{what}: expected the agent to write a line at least every {deadline.name} "
        f"({deadline.clients}); it was silent for {duration(silence)}"
    )
    yield ctx.at("silence-past-client-deadline", row, session, message)


@rule(
    "replay-outlasts-quiet-window",
    "info",
    "history updates after a quiet-window client would have taken the replay for over",
)
def replay_outlasts_quiet_window(ctx: Context) -> Iterator[Finding]:
    o = ctx.weight
    rows = ((w, s) for w in ctx.facts.windows if w.replaying for s in w.sessions.values())
    for (w, stats), weight in zip(rows, ctx.weights, strict=True):
        after = weight.updates_after_quiet_end
        if not after or weight.quiet_end_ms is None:
            continue
        message = (
            f"{ctx.describe(w)}: expected the replay to be over when no session/update had "
            f"come for {duration(o.quiet_window_ms)} (at most {duration(o.quiet_cap_ms)} after "
            f"the request), as a quiet-window client guesses; that moment came "
            f"{duration(weight.quiet_end_ms)} after the request, and "
            f"{counted(after, 'history update')} on {stats.session} came later: such a client "
            "would have taken them for live traffic"
        )
        yield ctx.at("replay-outlasts-quiet-window", w.req_row, stats.session, message)
