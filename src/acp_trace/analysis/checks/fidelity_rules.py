"""Rules of replay fidelity (rules.md "Replay fidelity: is the replay the session?"): each
compares what a replay carried with its source (`acp_trace.fidelity`), per session and replay,
once, with the count and the first example. All blame the agent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.fidelity import Difference, ReplayFidelity
from acp_trace.fidelity.compare import id_at
from acp_trace.fidelity.messages import exact_key
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted

_Count = Callable[[ReplayFidelity], int | None]


def _findings(
    ctx: Context, rule_id: str, n_of: _Count, what: str, noun: str, said: str
) -> Iterator[Finding]:
    """One finding per replay row whose count is positive: `N <noun>s <said>`, then the first
    difference of kind `what`, against the source the row was compared with."""
    for f in ctx.fidelity:
        n = n_of(f) or 0
        if n <= 0:
            continue
        first = next((d for d in f.differences if d.what == what and _shown(f, d, rule_id)), None)
        span = f.span
        source = _source(f)
        example = f"; the first: {_example(first)}" if first is not None else ""
        message = (
            f"{_where(ctx, f)}: expected the replay to carry the session as {source} had it; "
            f"{counted(n, noun)} {said}{example}"
        )
        yield ctx.at(rule_id, span.req_row, span.session, message)


def _shown(f: ReplayFidelity, d: Difference, rule_id: str) -> bool:
    """replay-id-unstable's example is an id change outside the prompts' ids."""
    if rule_id != "replay-id-unstable" or d.source_id is None:
        return True
    return exact_key(d.source_id) not in f.prompt_keys


def _where(ctx: Context, f: ReplayFidelity) -> str:
    method = ctx.timeline["method"][f.span.req_row] or "the replaying request"
    return f"{method} ({ctx.seq(f.span.req_row)})"


def _source(f: ReplayFidelity) -> str:
    if f.source is None:
        return "the session"
    name = "the live turns" if f.source == "live" else "the earlier replay"
    return f"{name} from {f.source_trace} seq {f.source_seq}"


def _example(d: Difference) -> str:
    """The first difference: kind, ids and seqs on both sides, bytes, and the start of its text."""
    parts = [d.kind]
    if d.source_seq is not None or d.source_id is not None:
        parts.append(f"source {id_at(d.source_id, d.source_seq)}")
    if d.replay_seq is not None:
        parts.append(f"replayed {id_at(d.replay_id, d.replay_seq)}")
    if d.what == "truncated":
        parts.append(f"{counted(d.replay_bytes or 0, 'byte')} of {count(d.source_bytes or 0)}")
    text = d.text if len(d.text) <= 40 else d.text[:39] + "…"
    return ", ".join(parts) + f": {json_text(text)}"


class FidelityRule(NamedTuple):
    """A rule of the catalogue, what it counts per replay row, the kind of difference its
    example is, and how a message says what happened (`N <noun>s <said>`)."""

    id: str
    severity: str
    summary: str
    counted_by: _Count
    what: str
    noun: str
    said: str


FIDELITY_RULES = (
    FidelityRule(
        "replay-prompt-id-changed",
        "error",
        "a prompt's user message replayed under another messageId, or its id with other content",
        lambda f: f.prompt_id_changed if f.span.v2 else 0,
        "prompt_id_changed",
        "user message",
        "not under the messageId its session/prompt response returned, or under that id with "
        "other content (acp-tck ACP-RESUME-204)",
    ),
    FidelityRule(
        "replay-chunk-before-message",
        "error",
        "a replayed chunk came before the whole-message update of its messageId",
        lambda f: f.chunks_before_message,
        "chunk_before_message",
        "chunk",
        "before the whole-message update of its messageId (acp-tck ACP-RESUME-205)",
    ),
    FidelityRule(
        "replay-duplicate-message",
        "warning",
        "a replay repeated a whole message or a tool call under the same id",
        lambda f: f.replay_duplicated,
        "duplicated",
        "repeated update",
        "(a whole-message update or tool_call whose id was already replayed in the window)",
    ),
    FidelityRule(
        "replay-id-unstable",
        "warning",
        "a replayed message matched its source by content under another id",
        lambda f: f.unstable_ids,
        "id_changed",
        "message",
        "replayed under another id than its source's (a client that deduplicates by id shows "
        "it twice)",
    ),
    FidelityRule(
        "replay-reordered",
        "warning",
        "a replay carried messages out of the order of its source",
        lambda f: f.replay_reordered,
        "reordered",
        "message",
        "out of its source's order",
    ),
    FidelityRule(
        "replay-truncated-content",
        "warning",
        "a replayed message or tool call carried less content than its source",
        lambda f: f.replay_truncated,
        "truncated",
        "message",
        "with less content than its source",
    ),
    FidelityRule(
        "replay-missing-messages",
        "info",
        "a replay left out messages of its source",
        lambda f: f.replay_missing,
        "missing",
        "source message",
        "not replayed (v2 allows a replay to leave messages out)",
    ),
    FidelityRule(
        "replay-extra-messages",
        "info",
        "a replay carried messages its complete source lacks",
        lambda f: f.replay_extra,
        "extra",
        "replayed message",
        "that its complete source lacks",
    ),
)


def _check(r: FidelityRule) -> Callable[[Context], Iterator[Finding]]:
    def check(ctx: Context) -> Iterator[Finding]:
        yield from _findings(ctx, r.id, r.counted_by, r.what, r.noun, r.said)

    check.__name__ = r.id.replace("-", "_")
    return check


for _r in FIDELITY_RULES:  # registered in catalogue order
    rule(_r.id, _r.severity, _r.summary)(_check(_r))
