"""The native path of the fidelity pass: the replays whose spans it can prove (every value of
their updates one polars can hold) built and matched in polars, all at once (`native_build`,
`native_match`, `native_fields`); every other replay takes the Python path (`compare._one`),
whose fields and differences these equal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from acp_trace.fidelity.content import content_text
from acp_trace.fidelity.messages import exact_key
from acp_trace.fidelity.native_build import SPAN_SCHEMA, BuiltSpans, build_spans
from acp_trace.fidelity.native_fields import Frames, assemble
from acp_trace.fidelity.native_rows import holdable
from acp_trace.fidelity.result import ReplayFidelity
from acp_trace.fidelity.source import Plan, Sources
from acp_trace.fidelity.spans import ReplaySpan, TurnSpan

SpanKey = tuple[Any, ...]


class _Spans:
    """The spans to build, each numbered once (a replay is the next one's source)."""

    def __init__(self, height: int) -> None:
        self.height = height
        self.number: dict[SpanKey, int] = {}
        self.rows: list[tuple[Any, ...]] = []
        self.turns: dict[int, TurnSpan] = {}

    def add(self, key: SpanKey, span: ReplaySpan | TurnSpan, stop: int | None) -> int:
        if key not in self.number:
            self.number[key] = n = len(self.rows)
            end = self.height if stop is None else min(stop, self.height)
            start = span.req_row
            self.rows.append((n, span.trace, span.session, start, max(end, start + 1), span.v2))
        return self.number[key]

    def replay(self, r: ReplaySpan) -> int:
        return self.add(("r", r.order, r.req_row, r.session), r, r.stop_row)

    def turn(self, t: TurnSpan) -> int:
        n = self.add(("t", *t.place), t, t.end_row)
        self.turns[n] = t
        return n

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=SPAN_SCHEMA, orient="row")


def compare_native(
    tl: pl.DataFrame,
    replays: Sequence[ReplaySpan],
    sources: Sources,
    seq_of: dict[int, int | None],
) -> dict[int, ReplayFidelity]:
    """The replays (by their place in `replays`) the native path can prove, compared."""
    spans = _Spans(tl.height)
    plans: dict[int, Plan] = {}
    for i, r in enumerate(replays):
        plans[i] = p = sources.plan(r)
        spans.replay(r)
        if p.replay is not None:
            spans.replay(p.replay)
        for t in [*p.turns, *_prompted(p)]:
            spans.turn(t)
    if not plans:
        return {}
    built = build_spans(tl, spans.frame())
    messages, odd = _with_prompts(built, spans)
    python = built.python | odd
    frames = Frames(messages, built, spans.frame().select("span", "trace"))
    for i, p in plans.items():
        parts = [spans.replay(p.replay)] if p.replay is not None else []
        parts += [spans.turn(t) for t in p.turns]
        prompts = [(spans.turn(t), exact_key(t.message_id)) for t in _prompted(p)]
        own = spans.replay(replays[i])
        held = all(holdable(key) for _, key in prompts)
        if held and python.isdisjoint([own, *parts, *(n for n, _ in prompts)]):
            frames.add(i, own, parts, prompts)
    return assemble(frames, replays, plans, seq_of)


def _prompted(p: Plan) -> list[TurnSpan]:
    """The v2 turns before the replay whose prompt answered a messageId (`_prompt_ids`)."""
    return [t for t in p.before if t.v2 and t.message_id is not None]


def _with_prompts(built: BuiltSpans, spans: _Spans) -> tuple[pl.DataFrame, set[int]]:
    """The messages with each turn's prompt first where the agent sent no user message of it
    (`Sources.turn_messages`), and the turns whose prompt polars cannot hold."""
    m = built.messages
    users = set(m.filter(pl.col("kind") == "user_message")["span"].unique().to_list())
    rows, odd = [], set()
    for n, t in spans.turns.items():
        if n in users:
            continue
        ident = t.message_id if t.v2 else None
        key = None if ident is None else exact_key(ident)
        text = content_text(t.prompt)
        if not (holdable(key) and holdable(text)):
            odd.add(n)
            continue
        if key is not None and key[0] != "s":
            built.ids[t.req_row] = ident
        rows.append((n, "user_message", key, t.req_row, t.req_seq, text, -1))
    schema = {c: m.schema[c] for c in ("span", "kind", "key", "first_row", "first_seq", "text")}
    prompts = pl.DataFrame(rows, schema={**schema, "idx": m.schema["idx"]}, orient="row")
    prompts = prompts.with_columns(bytes=pl.col("text").str.len_bytes())
    out = pl.concat([prompts.select(m.columns), m]).sort("span", "idx")
    return out, odd
