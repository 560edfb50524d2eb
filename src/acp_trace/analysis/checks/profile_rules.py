"""The claude-agent-acp profile: its vendor signals on prompt turns (rules.md)."""

from __future__ import annotations

from collections.abc import Iterator

from acp_trace.analysis.checks.registry import Context, Finding, rule


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
