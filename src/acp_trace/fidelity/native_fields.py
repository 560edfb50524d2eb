"""The native path's fields and differences: the natively built messages of every replay and
its source set side by side (`native_match`), counted, and each difference made the
`Difference` the Python path makes (`compare._compared`, `_fields`, `_prompts`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

from acp_trace.fidelity.messages import exact_key
from acp_trace.fidelity.native_build import BuiltSpans
from acp_trace.fidelity.native_match import match_all
from acp_trace.fidelity.result import TEXT_PREVIEW, WHATS, Difference, ReplayFidelity
from acp_trace.fidelity.source import Plan
from acp_trace.fidelity.spans import ReplaySpan

_ORDER = {w: i for i, w in enumerate(WHATS)}


class Frames:
    """The replays the native path compares: each with its own span, its source's spans in
    order, and the turns its prompts' messageIds are read from."""

    def __init__(self, messages: pl.DataFrame, built: BuiltSpans, traces: pl.DataFrame) -> None:
        self.messages, self.built, self.traces = messages, built, traces
        self.own: list[tuple[int, int]] = []  # (rep, span)
        self.parts: list[tuple[int, int, int]] = []  # (rep, span, position)
        self.prompts: dict[int, list[tuple[int, str]]] = {}  # rep -> (turn's span, its key)

    def add(self, rep: int, own: int, parts: list[int], prompts: list[tuple[int, str]]) -> None:
        self.own.append((rep, own))
        self.parts.extend((rep, span, pos) for pos, span in enumerate(parts))
        self.prompts[rep] = prompts

    def id_of(self, key: str | None, row: int) -> Any:
        """A message's id as parsed (a string id is its key's tail)."""
        if key is None:
            return None
        return key[1:] if key[0] == "s" else self.built.ids[row]


def assemble(
    f: Frames, replays: Sequence[ReplaySpan], plans: dict[int, Plan], seq_of: dict[int, int | None]
) -> dict[int, ReplayFidelity]:
    own = pl.DataFrame(f.own, schema={"rep": pl.Int64, "span": pl.Int64}, orient="row")
    r = own.join(f.messages, on="span").sort("rep", "idx").rename({"idx": "ridx"})
    part_schema = {"rep": pl.Int64, "span": pl.Int64, "pos": pl.Int64}
    parts = pl.DataFrame(f.parts, schema=part_schema, orient="row")
    s = (
        parts.join(f.messages, on="span")
        .join(f.traces, on="span")
        .sort("rep", "pos", "idx")
        .with_columns(sidx=pl.int_range(pl.len()).over("rep"))
    )
    prompt_ids = _prompt_ids(f)
    out: dict[int, ReplayFidelity] = {}
    sizes = dict(r.group_by("rep").len().iter_rows())
    for rep, _ in f.own:
        rf = ReplayFidelity(replays[rep], replay_messages=sizes.get(rep, 0))
        rf.prompt_keys = frozenset(prompt_ids[rep])
        out[rep] = rf
    _own_differences(f, out, r, own)
    _prompts(f, out, r, {rep: ids for rep, ids in prompt_ids.items() if replays[rep].v2})
    sourced = [rep for rep, _ in f.own if plans[rep].kind is not None]
    for rep in sourced:
        _source(out[rep], plans[rep], seq_of)
    keep = pl.col("rep").is_in(sourced)
    _matched(f, out, s.filter(keep), r.filter(keep), prompt_ids)
    for rf in out.values():
        rf.differences.sort(key=lambda d: _ORDER[d.what])
    return out


def _source(rf: ReplayFidelity, p: Plan, seq_of: dict[int, int | None]) -> None:
    first = p.replay or p.turns[0]
    rf.source, rf.source_complete = p.kind, p.complete
    rf.source_trace, rf.source_seq = first.trace, seq_of.get(first.req_row)
    rf.source_turns = len(p.turns)
    rf.source_replay = p.replay is not None


def _own_differences(
    f: Frames, out: dict[int, ReplayFidelity], r: pl.DataFrame, own: pl.DataFrame
) -> None:
    """The replay's repeated updates and (v2) its chunks before their whole update."""
    dups = own.join(f.built.duplicated, on="span").join(r.drop("span"), on=["rep", "kind", "key"])
    for rep, d in _made(f, "duplicated", dups.sort("rep", "row"), "r"):
        out[rep].replay_duplicated += 1
        out[rep].differences.append(d)
    firsts = own.join(f.built.chunk_first, on="span").sort("rep", "row")
    cols = (firsts[c].to_list() for c in ("rep", "kind", "key", "row", "seq"))
    for rep, kind, key, row, seq in zip(*cols, strict=True):
        ident = f.id_of(key, row)
        d = Difference("chunk_before_message", kind, None, ident, None, None, seq, None, None, "")
        out[rep].chunks_before_message += 1
        out[rep].differences.append(d)


def _prompt_ids(f: Frames) -> dict[int, dict[str, str]]:
    """Each replay's prompts' messageIds with their user message's text (`_prompt_ids`)."""
    keys = {n: key for turns in f.prompts.values() for n, key in turns}
    tk = pl.DataFrame(
        list(keys.items()), schema={"span": pl.Int64, "tkey": pl.String}, orient="row"
    )
    users = f.messages.filter(pl.col("kind") == "user_message").join(tk, on="span")
    texts = (
        users.sort("span", "idx")
        .group_by("span")
        .agg(
            named=pl.col("text").filter(pl.col("key") == pl.col("tkey")).first(),
            first=pl.col("text").first(),
        )
    )
    text_of = {n: named if named is not None else first for n, named, first in texts.iter_rows()}
    return {rep: {key: text_of.get(n, "") for n, key in turns} for rep, turns in f.prompts.items()}


def _prompts(
    f: Frames, out: dict[int, ReplayFidelity], r: pl.DataFrame, ids: dict[int, dict[str, str]]
) -> None:
    """A prompt's user message under another id, or its id with other content (v2)."""
    rows = [(rep, k, t) for rep, d in ids.items() for k, t in d.items()]
    p = pl.DataFrame(
        rows, schema={"rep": pl.Int64, "key": pl.String, "ptext": pl.String}, orient="row"
    )
    users = r.filter(pl.col("kind") == "user_message").join(p, on=["rep", "key"], how="left")
    said = p.select("rep", pl.col("ptext").alias("text")).unique()
    users = users.join(said.with_columns(hit=pl.lit(True)), on=["rep", "text"], how="left")
    changed = (pl.col("ptext").is_not_null() & (pl.col("ptext") != pl.col("text"))) | (
        pl.col("ptext").is_null() & pl.col("hit").fill_null(False)
    )
    for rep, d in _made(f, "prompt_id_changed", users.filter(changed).sort("rep", "ridx"), "r"):
        out[rep].prompt_id_changed += 1
        out[rep].differences.append(d)


def _matched(
    f: Frames,
    out: dict[int, ReplayFidelity],
    s: pl.DataFrame,
    r: pl.DataFrame,
    prompt_ids: dict[int, dict[str, str]],
) -> None:
    """The counts and differences of the matching (`compare._fields`)."""
    m = match_all(s, r)
    for rep, n in s.group_by("rep").len().iter_rows():
        out[rep].source_messages = n
    for rep in {rep for rep in out if out[rep].source is not None}:
        rf = out[rep]
        rf.source_messages = rf.source_messages or 0
        rf.replay_missing = rf.replay_id_changed = rf.replay_reordered = 0
        rf.replay_truncated = rf.replay_truncated_bytes = 0
        rf.replay_extra = 0 if rf.source_complete else None
    complete = [rep for rep in out if out[rep].source_complete]
    changed = (
        (pl.col("by") == "content")
        & pl.col("key_s").is_not_null()
        & pl.col("key_r").is_not_null()
        & (pl.col("key_s") != pl.col("key_r"))
    )
    steps = (
        ("missing", m.missing, "s"),
        ("extra", m.extra.filter(pl.col("rep").is_in(complete)), "r"),
        ("id_changed", m.pairs.filter(changed), "sr"),
        ("reordered", m.reordered, "sr"),
        ("truncated", m.pairs.filter(pl.col("bytes_r") < pl.col("bytes_s")), "sr"),
    )
    for what, frame, sides in steps:
        field = "replay_" + what
        for rep, d in _made(f, what, frame, sides):
            rf = out[rep]
            setattr(rf, field, getattr(rf, field) + 1)
            rf.differences.append(d)
            if what == "id_changed" and exact_key(d.source_id) not in prompt_ids[rep]:
                rf.unstable_ids += 1
            elif what == "truncated":
                rf.replay_truncated_bytes += d.source_bytes - d.replay_bytes  # type: ignore[operator]


def _made(
    f: Frames, what: str, frame: pl.DataFrame, sides: str
) -> Iterator[tuple[int, Difference]]:
    """The differences of the rows of `frame`, with their replay's number: `sides` "s" (a
    source message), "r" (a replay message) or "sr" (a pair, columns suffixed _s and _r)."""
    n = frame.height
    none: list[Any] = [None] * n

    def col(name: str, side: str) -> list[Any]:
        if side not in sides:
            return none
        return frame[name + ("_" + side if sides == "sr" else "")].to_list()

    def ids(side: str) -> list[Any]:
        keys, rows = col("key", side), col("first_row", side)
        return [f.id_of(k, r) for k, r in zip(keys, rows, strict=True)] if side in sides else none

    ref = sides[0]
    texts = [t[:TEXT_PREVIEW] for t in col("text", ref)]
    columns = (
        frame["rep"].to_list(),
        col("kind", ref),
        ids("s"),
        ids("r"),
        col("trace", "s"),
        col("first_seq", "s"),
        col("first_seq", "r"),
        col("bytes", "s"),
        col("bytes", "r"),
        texts,
    )
    for rep, *values in zip(*columns, strict=True):
        yield rep, Difference(what, *values)
