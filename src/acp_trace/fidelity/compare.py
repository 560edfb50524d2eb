"""Each replay set against its source: the fields of rules.md "Replay fidelity" and every
difference behind them, one `ReplayFidelity` per replay row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from acp_trace.fidelity.match import Matching, Pair, match
from acp_trace.fidelity.messages import Message
from acp_trace.fidelity.native import compare_native
from acp_trace.fidelity.result import WHATS, Difference, ReplayFidelity, preview
from acp_trace.fidelity.rows import AgentRows
from acp_trace.fidelity.source import Source, Sources
from acp_trace.fidelity.spans import NewSession, ReplaySpan, TurnSpan
from acp_trace.jsonrpc import json_text


def compare(
    tl: pl.DataFrame,
    replays: Sequence[ReplaySpan],
    turns: Sequence[TurnSpan],
    new_sessions: Sequence[NewSession],
    seq_of: dict[int, int | None],
    *,
    native: bool = True,
) -> list[ReplayFidelity]:
    """One `ReplayFidelity` per replay, in the order given. `seq_of`: row -> seq for the rows
    the spans start at (a difference names the source by its trace and seq). The replays the
    native path can prove take it (`native.py`; `native=False`: none), the others this loop."""
    rows = AgentRows(tl)
    sources = Sources(rows, replays, turns, new_sessions)
    done = compare_native(tl, replays, sources, seq_of) if native else {}
    return [done.get(i) or _one(r, sources, seq_of) for i, r in enumerate(replays)]


def _one(r: ReplaySpan, sources: Sources, seq_of: dict[int, int | None]) -> ReplayFidelity:
    out = _compared(r, sources, seq_of)
    order = {w: i for i, w in enumerate(WHATS)}
    out.differences.sort(key=lambda d: order[d.what])  # stable: each kind in record order
    return out


def _compared(r: ReplaySpan, sources: Sources, seq_of: dict[int, int | None]) -> ReplayFidelity:
    built = sources.replay_built(r)
    out = ReplayFidelity(r, replay_messages=len(built.messages))
    out.replay_duplicated = len(built.duplicated)
    for m in built.duplicated:
        out.differences.append(_diff("duplicated", None, m))
    if r.v2:
        out.chunks_before_message = len(built.chunk_first)
        for seq, ident, kind in built.chunk_first:
            out.differences.append(
                Difference(
                    "chunk_before_message", kind, None, ident, None, None, seq, None, None, ""
                )
            )
    src = sources.of(r)
    out.prompt_keys = frozenset(src.prompt_ids)
    _prompts(out, src, built.messages, r.v2)
    if src.kind is None:
        return out
    first = src.replay or src.turns[0]
    out.source, out.source_complete = src.kind, src.complete
    out.source_trace, out.source_seq = first.trace, seq_of.get(first.req_row)
    out.source_turns = len(src.turns)
    out.source_replay = src.replay is not None
    _fields(out, src, match(src.messages, built.messages))
    return out


def against(
    recorded_tl: pl.DataFrame, recorded: ReplaySpan, new_tl: pl.DataFrame, new: ReplaySpan
) -> ReplayFidelity:
    """A new replay set against a recorded one of the same session, the recorded replay its
    whole source (`acp-trace drive`: the recording's replay is what the agent should carry
    again). Its messages may be counted as extra only against a complete source: null here."""
    seq_of = {recorded.req_row: recorded_tl["seq"][recorded.req_row]}
    before = Sources(AgentRows(recorded_tl), [recorded], [], []).replay_built(recorded)
    now = Sources(AgentRows(new_tl), [new], [], []).replay_built(new)
    out = ReplayFidelity(new, replay_messages=len(now.messages))
    out.replay_duplicated = len(now.duplicated)
    src = Source("replay", False, recorded, [], before.messages)
    out.source, out.source_complete, out.source_replay = "replay", False, True
    out.source_trace, out.source_seq, out.source_turns = recorded.trace, seq_of[recorded.req_row], 0
    _fields(out, src, match(before.messages, now.messages))
    return out


def _fields(out: ReplayFidelity, src: Source, m: Matching) -> None:
    changed = [p for p in m.pairs if p.by == "content" and _ids_differ(p)]
    cut = [p for p in m.pairs if p.replay.bytes < p.source.bytes]
    out.source_messages = len(src.messages)
    out.replay_missing = len(m.missing)
    out.replay_extra = len(m.extra) if src.complete else None
    out.replay_id_changed = len(changed)
    out.unstable_ids = sum(1 for p in changed if p.source.key not in src.prompt_ids)
    out.replay_reordered = len(m.reordered)
    out.replay_truncated = len(cut)
    out.replay_truncated_bytes = sum(p.source.bytes - p.replay.bytes for p in cut)
    add = out.differences.append
    for s in m.missing:
        add(_diff("missing", s, None))
    if src.complete:
        for x in m.extra:
            add(_diff("extra", None, x))
    for what, chosen in (("id_changed", changed), ("reordered", m.reordered), ("truncated", cut)):
        for p in chosen:
            add(_diff(what, p.source, p.replay))


def _prompts(out: ReplayFidelity, src: Source, replay: list[Message], v2: bool) -> None:
    """replay-prompt-id-changed: a prompt's user message under another id, or its id M with
    other content (v2 replays only)."""
    if not v2 or not src.prompt_ids:
        return
    by_text: dict[str, str] = {text: key for key, text in src.prompt_ids.items()}
    for m in replay:
        if m.kind != "user_message":
            continue
        key = m.key
        if (key in src.prompt_ids and src.prompt_ids[key] != m.text) or (
            key not in src.prompt_ids and m.text in by_text
        ):
            out.prompt_id_changed += 1
            out.differences.append(_diff("prompt_id_changed", None, m))


def id_at(ident: Any, seq: int | None) -> str:
    """Where a message of a difference is, as every output says it: `"m1" at seq 12`, `seq 12`
    without an id, `the prompt` for a prompt's text (no record of its own). Raw: escape it."""
    at = "the prompt" if seq is None else f"seq {seq}"
    return at if ident is None else f"{json_text(ident)} at {at}"


def _ids_differ(p: Pair) -> bool:
    return p.source.key is not None and p.replay.key is not None and p.source.key != p.replay.key


def _diff(what: str, s: Message | None, r: Message | None) -> Difference:
    ref = s or r
    assert ref is not None
    return Difference(
        what=what,
        kind=ref.kind,
        source_id=s.id if s else None,
        replay_id=r.id if r else None,
        source_trace=s.trace if s else None,
        source_seq=s.first_seq if s else None,
        replay_seq=r.first_seq if r else None,
        source_bytes=s.bytes if s else None,
        replay_bytes=r.bytes if r else None,
        text=preview(ref.text),
    )
