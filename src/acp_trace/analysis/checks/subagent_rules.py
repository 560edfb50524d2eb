"""Rules of stable subagent sessions (2026-11-20) and of prompt suggestions (rules.md,
"Subagents and suggestions").

- `child-update-before-announce`: the first `subagent_update` for a child "MUST be sent before
  any live request or notification bearing the child's session ID" (the spec's SubagentUpdate).
- `suggestions-in-replay`: the prompt-suggestions RFD: agents SHOULD NOT send
  `prompt_suggestions_update` when they replay.
- `subagents-not-advertised`: v1 "The Agent MUST NOT send subagent_update, session_message, or
  session_message_chunk unless the Client advertised subagents" (`clientCapabilities.subagents`,
  `{}`; omitted or null means no). v2 needs no capability.

Unknown `sessionUpdate` variants (claude-agent-acp's `subagent_state_update`,
`subagent_spawned`, `async_task_*`) are neither live nor history: no rule here looks at them.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.jsonrpc import as_dict, loads
from acp_trace.quantities import count

SUBAGENT_KINDS = ("subagent_update", "session_message", "session_message_chunk")


@rule(
    "child-update-before-announce",
    "error",
    "a live update or agent request for a child came before the subagent_update announcing it",
)
def child_update_before_announce(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    announced = (
        tl.filter(
            (pl.col("update_kind") == "subagent_update")
            & (pl.col("src") == "agent")
            & pl.col("update_session").is_not_null()
        )
        .group_by("trace", "update_session", maintain_order=True)
        .agg(pl.col("row").min().alias("announce"), pl.col("session").first().alias("parent"))
        .rename({"update_session": "session"})
    )
    if announced.is_empty():
        return
    carrying = tl.filter(
        (pl.col("src") == "agent")
        & (
            (pl.col("update_class") == "live")
            | ((pl.col("kind") == "request") & (pl.col("method") != "session/update"))
        )
    ).select("row", "trace", "session", "kind", "method", "update_kind")
    early = (
        carrying.join(announced, on=["trace", "session"], how="inner")
        .filter(pl.col("row") < pl.col("announce"))
        .sort("row")
    )
    for group in early.partition_by("trace", "session", maintain_order=True):
        row, session, kind, method, update_kind, announce, parent = group.select(
            "row", "session", "kind", "method", "update_kind", "announce", "parent"
        ).row(0)
        what = method if kind == "request" else update_kind
        more = f" (and {count(group.height - 1)} more before it)" if group.height > 1 else ""
        yield ctx.at(
            "child-update-before-announce",
            row,
            session,
            f"{what} on child {session} at {ctx.seq(row)} came before the subagent_update on "
            f"{parent} that announces it at {ctx.seq(announce)}{more}; the first subagent_update "
            "for a child must come before any live message that carries its sessionId",
        )


@rule(
    "suggestions-in-replay", "warning", "a prompt_suggestions_update before the marker of a replay"
)
def suggestions_in_replay(ctx: Context) -> Iterator[Finding]:
    for w in ctx.facts.windows:
        if not w.replaying:
            continue
        for stats in w.sessions.values():
            rows = [
                r for r in stats.suggestion_rows if stats.marker_row is None or r < stats.marker_row
            ]
            if not rows:
                continue
            until = (
                f"its marker at {ctx.seq(stats.marker_row)}"
                if stats.marker_row is not None
                else "the end of the window (no marker came)"
            )
            more = f" (and {count(len(rows) - 1)} more)" if len(rows) > 1 else ""
            yield ctx.at(
                "suggestions-in-replay",
                rows[0],
                stats.session,
                f"prompt_suggestions_update on {stats.session} at {ctx.seq(rows[0])}{more} came "
                f"during the replay of {ctx.describe(w)}, before {until}; agents should not send "
                "prompt suggestions when they replay",
            )


@rule(
    "subagents-not-advertised",
    "error",
    "a v1 agent sent subagent updates to a client that did not advertise subagents",
)
def subagents_not_advertised(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    sent = tl.filter(
        (pl.col("src") == "agent")
        & (pl.col("method") == "session/update")
        & pl.col("update_kind").is_in(SUBAGENT_KINDS)
        & (pl.col("protocol") == 1)
    )
    if sent.is_empty():
        return
    advertised = _advertised(tl)
    for group in sent.partition_by("trace", maintain_order=True):
        trace = group["trace"][0]
        if advertised.get(trace, False):
            continue
        row, session, kind = group.select("row", "session", "update_kind").row(0)
        more = f" (and {count(group.height - 1)} more)" if group.height > 1 else ""
        yield ctx.at(
            "subagents-not-advertised",
            row,
            session,
            f"{kind} on {session} at {ctx.seq(row)}{more} on a v1 connection whose client did "
            "not advertise clientCapabilities.subagents in initialize; a v1 agent must not send "
            "subagent_update, session_message or session_message_chunk unless the client did",
        )


def _advertised(tl: pl.DataFrame) -> dict[str, bool]:
    """Per trace: whether the client's first initialize request has a
    `clientCapabilities.subagents` object (`{}`); omitted or null means no."""
    init = (
        tl.filter(
            (pl.col("kind") == "request")
            & (pl.col("src") == "client")
            & (pl.col("method") == "initialize")
        )
        .group_by("trace", maintain_order=True)
        .first()
    )
    out = {}
    for trace, msg in init.select("trace", "msg").iter_rows():
        try:
            params = as_dict(as_dict(loads(msg or "null")).get("params"))
        except ValueError:
            params = {}
        out[trace] = isinstance(as_dict(params.get("clientCapabilities")).get("subagents"), dict)
    return out
