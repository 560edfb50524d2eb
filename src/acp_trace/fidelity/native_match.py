"""The native path's matching (rules.md "Matching"), as `match.match` does it, for every replay
at once: joins on (replay, kind, id), then on (replay, kind, text) for what is left, each side
ranked in its order, so the k-th free source message of an id or a text takes the k-th free
replay message of it (the first free one, as the Python loop takes it).

Frames: the sources `s` and the replays `r`, one row per message, with `rep` (the replay's
number), `sidx` / `ridx` (its place in the source / the replay), `kind`, `key`, `text`,
`bytes`, `first_seq`, `first_row` and, in `s`, `trace`."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from acp_trace.fidelity.match import longest_increasing


@dataclass
class Matched:
    """`pairs` (rep, sidx, ridx, by, and each side's columns suffixed `_s` / `_r`), `missing`
    (source rows), `extra` (replay rows) and `reordered` (pairs), each in the order the Python
    path lists them."""

    pairs: pl.DataFrame
    missing: pl.DataFrame
    extra: pl.DataFrame
    reordered: pl.DataFrame


_SIDE = ("kind", "key", "text", "bytes", "first_seq", "first_row")


def match_all(s: pl.DataFrame, r: pl.DataFrame) -> Matched:
    """Each source message matched to at most one replay message of its replay and kind."""
    rank = pl.int_range(pl.len())
    ident = ["rep", "kind", "key"]
    keyed = s.filter(pl.col("key").is_not_null()).unique(ident, keep="first", maintain_order=True)
    r_keyed = r.filter(pl.col("key").is_not_null()).unique(ident, keep="first", maintain_order=True)
    by_id = keyed.join(r_keyed.select(*ident, "ridx"), on=ident)
    by_id = by_id.select("rep", "sidx", "ridx", by=pl.lit("id"))
    s_left = s.join(by_id, on=["rep", "sidx"], how="anti").sort("rep", "sidx")
    r_free = r.join(by_id, on=["rep", "ridx"], how="anti").sort("rep", "ridx")
    text_key = ["rep", "kind", "text", "n"]
    by_text = s_left.with_columns(n=rank.over("rep", "kind", "text")).join(
        r_free.with_columns(n=rank.over("rep", "kind", "text")).select(*text_key, "ridx"),
        on=text_key,
    )
    by_text = by_text.select("rep", "sidx", "ridx", by=pl.lit("content"))
    found = pl.concat([by_id, by_text]).sort("rep", "sidx")
    pairs = found.join(_side(s, "sidx", "_s"), on=["rep", "sidx"]).join(
        _side(r, "ridx", "_r"), on=["rep", "ridx"]
    )
    pairs = pairs.sort("rep", "sidx")
    missing = s_left.join(by_text, on=["rep", "sidx"], how="anti").sort("rep", "sidx")
    extra = r_free.join(by_text, on=["rep", "ridx"], how="anti").sort("rep", "ridx")
    return Matched(pairs, missing, extra, _reordered(pairs))


def _side(frame: pl.DataFrame, idx: str, suffix: str) -> pl.DataFrame:
    extra = ["trace"] if "trace" in frame.columns else []
    return frame.select("rep", idx, *(pl.col(c).alias(c + suffix) for c in (*_SIDE, *extra)))


def _reordered(pairs: pl.DataFrame) -> pl.DataFrame:
    """The pairs outside one longest run in source order (`match._out_of_order`), read in
    source order; only the replays whose pairs are out of order go through the Python loop."""
    late = pairs.filter((pl.col("ridx").diff().over("rep") < 0).any().over("rep"))
    if late.is_empty():
        return pairs.clear()
    kept: list[tuple[int, int]] = []
    for (rep,), part in late.group_by(["rep"], maintain_order=True):
        ridx = part["ridx"].to_list()
        sidx = part["sidx"].to_list()
        in_replay = sorted(range(len(ridx)), key=ridx.__getitem__)
        keep = longest_increasing(in_replay)
        kept.extend((int(rep), sidx[i]) for i in range(len(ridx)) if i not in keep)
    chosen = pl.DataFrame(
        kept, schema={"rep": pairs["rep"].dtype, "sidx": pairs["sidx"].dtype}, orient="row"
    )
    return pairs.join(chosen, on=["rep", "sidx"], how="semi").sort("rep", "sidx")
