"""The native path's fields and differences: the natively built messages of every replay and
its source set side by side (`native_match`), counted, and each difference made the
`Difference` the Python path makes (`compare._compared`, `_fields`, `_prompts`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from acp_trace.fidelity.native_build import BuiltSpans
from acp_trace.fidelity.native_match import match_all
from acp_trace.fidelity.result import WHATS, Difference, ReplayFidelity, preview
from acp_trace.fidelity.source import Plan
from acp_trace.fidelity.spans import ReplaySpan

_COLS = ("kind", "key", "text", "bytes", "first_seq", "first_row")
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
    _prompts(f, out, r, prompt_ids)
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
    for row in _rows(dups.sort("rep", "row")):
        rf = out[row["rep"]]
        rf.replay_duplicated += 1
        rf.differences.append(_diff(f, "duplicated", None, row))
    firsts = own.join(f.built.chunk_first, on="span").sort("rep", "row")
    for row in _rows(firsts):
        rf = out[row["rep"]]
        rf.chunks_before_message += 1
        ident = f.id_of(row["key"], row["row"])
        rf.differences.append(
            Difference(
                "chunk_before_message",
                row["kind"],
                None,
                ident,
                None,
                None,
                row["seq"],
                None,
                None,
                "",
            )
        )


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
    for row in _rows(users.filter(changed).sort("rep", "ridx")):
        rf = out[row["rep"]]
        rf.prompt_id_changed += 1
        rf.differences.append(_diff(f, "prompt_id_changed", None, row))


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
    for row in _rows(m.missing):
        out[row["rep"]].replay_missing += 1  # type: ignore[operator]
        out[row["rep"]].differences.append(_diff(f, "missing", row, None))
    for row in _rows(m.extra):
        rf = out[row["rep"]]
        if rf.source_complete:
            rf.replay_extra += 1  # type: ignore[operator]
            rf.differences.append(_diff(f, "extra", None, row))
    changed = (
        (pl.col("by") == "content")
        & pl.col("key_s").is_not_null()
        & pl.col("key_r").is_not_null()
        & (pl.col("key_s") != pl.col("key_r"))
    )
    for row in _rows(m.pairs.filter(changed)):
        rf = out[row["rep"]]
        rf.replay_id_changed += 1  # type: ignore[operator]
        if row["key_s"] not in prompt_ids[row["rep"]]:
            rf.unstable_ids += 1
        rf.differences.append(_pair(f, "id_changed", row))
    for row in _rows(m.reordered):
        out[row["rep"]].replay_reordered += 1  # type: ignore[operator]
        out[row["rep"]].differences.append(_pair(f, "reordered", row))
    for row in _rows(m.pairs.filter(pl.col("bytes_r") < pl.col("bytes_s"))):
        rf = out[row["rep"]]
        rf.replay_truncated += 1  # type: ignore[operator]
        rf.replay_truncated_bytes += row["bytes_s"] - row["bytes_r"]  # type: ignore[operator]
        rf.differences.append(_pair(f, "truncated", row))


def _rows(frame: pl.DataFrame) -> Iterable[dict[str, Any]]:
    return frame.iter_rows(named=True)


def _pair(f: Frames, what: str, row: dict[str, Any]) -> Difference:
    s = {c: row[c + "_s"] for c in (*_COLS, "trace")}
    r = {c: row[c + "_r"] for c in _COLS}
    return _diff(f, what, s, r)


def _diff(f: Frames, what: str, s: dict[str, Any] | None, r: dict[str, Any] | None) -> Difference:
    ref = s or r
    assert ref is not None
    return Difference(
        what=what,
        kind=ref["kind"],
        source_id=f.id_of(s["key"], s["first_row"]) if s else None,
        replay_id=f.id_of(r["key"], r["first_row"]) if r else None,
        source_trace=s["trace"] if s else None,
        source_seq=s["first_seq"] if s else None,
        replay_seq=r["first_seq"] if r else None,
        source_bytes=s["bytes"] if s else None,
        replay_bytes=r["bytes"] if r else None,
        text=preview(ref["text"]),
    )
