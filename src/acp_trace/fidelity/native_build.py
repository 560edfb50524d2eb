"""The native path's messages: every span's messages and tool calls built at once with polars
group-bys on (span, kind, id), as `messages.build` builds them for a v2 span whose updates all
carry an id (no run of chunks to follow: any other record between them changes nothing).

A span here is a number and (trace, session, start row, stop row): its updates are the agent's
fidelity updates on its session strictly after the start row and before the stop row, found by
one search in the candidate rows sorted by (trace, session, row)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from acp_trace.fidelity.messages import CHUNK_KINDS, FIDELITY_KINDS
from acp_trace.fidelity.native_rows import ReadRows, read_rows

SPAN_SCHEMA: dict[str, Any] = {
    "span": pl.Int64,
    "trace": pl.String,
    "session": pl.String,
    "start": pl.Int64,
    "stop": pl.Int64,  # exclusive; the timeline's height for a span to the end
}
_AGENT = (pl.col("src") == "agent") & pl.col("kind").is_in(
    ["request", "response", "error", "notification"]
)
_WANTED = pl.col("update_kind").is_in(list(FIDELITY_KINDS)).fill_null(False)
_CHUNKS = list(CHUNK_KINDS)


@dataclass
class BuiltSpans:
    """Every span's messages (`messages`: span, idx, kind, key, first_row, first_seq, text,
    bytes; idx in order of the first record), its repeated whole updates and tool calls
    (`duplicated`: span, row, kind, key), its chunks before their whole update (`chunk_first`:
    span, row, seq, kind, key), the spans the native path cannot build (`python`: an update
    with no id, or one polars cannot hold) and the ids that are no string (`ids`: row -> id)."""

    messages: pl.DataFrame
    duplicated: pl.DataFrame
    chunk_first: pl.DataFrame
    python: set[int]
    ids: dict[int, Any]


def build_spans(tl: pl.DataFrame, spans: pl.DataFrame) -> BuiltSpans:
    """The messages of every span of `spans` (SPAN_SCHEMA)."""
    updates = _span_updates(tl, spans)
    rows = updates["row"].unique().sort()
    read = read_rows(tl.select("row", pl.col("update_kind").alias("kind"), "msg")[rows])
    return _build(updates, read)


def _span_updates(tl: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """(span, row, seq, kind) of each fidelity update inside each span, by span then row."""
    pairs = spans.select("trace", "session").unique().with_row_index("g")
    shift = pl.col("g").cast(pl.Int64) * (1 << 32)
    cand = (
        tl.lazy()
        .filter(_AGENT & _WANTED)
        .select("row", "seq", "trace", "session", pl.col("update_kind").alias("kind"))
        .join(pairs.lazy(), on=["trace", "session"])
        .with_columns(at=shift + pl.col("row").cast(pl.Int64))
        .sort("at")
        .collect()
    )
    bounds = spans.join(pairs, on=["trace", "session"]).with_columns(
        lo=shift + pl.col("start") + 1, hi=shift + pl.col("stop")
    )
    lo = cand["at"].search_sorted(bounds["lo"], side="left")
    hi = cand["at"].search_sorted(bounds["hi"], side="left")
    reach = pl.DataFrame({"span": bounds["span"], "lo": lo, "hi": hi}).with_columns(
        hi=pl.max_horizontal("lo", "hi")
    )
    at = reach.select("span", pl.int_ranges("lo", "hi", dtype=pl.Int64).alias("i")).explode("i")
    at = at.drop_nulls("i")
    picked = cand.select("row", "seq", "kind")[at["i"]]
    return picked.with_columns(span=at["span"]).sort("span", "row")


def _build(updates: pl.DataFrame, read: ReadRows) -> BuiltSpans:
    whole = updates.join(read.frame(), on="row", how="left", maintain_order="left")
    python = set(
        whole.filter(
            pl.col("row").is_in(list(read.unprovable)) | (pl.col("ok") & pl.col("key").is_null())
        )["span"].to_list()
    )
    u = whole.filter(pl.col("ok") & ~pl.col("span").is_in(list(python))).with_columns(
        tool=pl.col("kind").is_in(["tool_call", "tool_call_update"]),
        chunk=pl.col("kind").is_in(_CHUNKS),
    )
    u = u.with_columns(
        mkind=pl.when("tool")
        .then(pl.lit("tool_call"))
        .otherwise(pl.col("kind").str.strip_suffix("_chunk"))
    )
    said, tools = _said(u), _tools(u)
    cols = [*_GROUP, "first_row", "first_seq", "text"]
    messages = (
        pl.concat([said.select(cols), tools.select(cols)])
        .sort("span", "first_row")
        .with_columns(idx=pl.int_range(pl.len()).over("span"), bytes=pl.col("text").str.len_bytes())
        .rename({"mkind": "kind"})
    )
    return BuiltSpans(messages, _duplicated(u), _chunk_first(said, u), python, read.ids)


_GROUP = ["span", "mkind", "key"]


def _said(u: pl.DataFrame) -> pl.DataFrame:
    """The messages: their first record, their text (every update's, in order), and the rows
    of their first whole update and first chunk."""
    return (
        u.filter(~pl.col("tool"))
        .with_columns(
            whole_row=pl.when(~pl.col("chunk")).then(pl.col("row")),
            chunk_row=pl.when("chunk").then(pl.col("row")),
        )
        .group_by(_GROUP, maintain_order=True)
        .agg(
            first_row=pl.col("row").first(),
            first_seq=pl.col("seq").first(),
            text=pl.col("text"),
            first_whole=pl.col("whole_row").min(),
            first_chunk=pl.col("chunk_row").min(),
        )
        .with_columns(pl.col("text").list.join(""))
    )


def _tools(u: pl.DataFrame) -> pl.DataFrame:
    """The tool calls: their first record and their text (`content.tool_call_text`: the last
    status, then the last content's items, else the last rawOutput)."""
    last = {
        "status": pl.col("status").filter(pl.col("has_status")).last(),
        "content": pl.col("text").filter(pl.col("has_content")).last(),
        "raw": pl.col("raw").filter(pl.col("has_raw")).last(),
    }
    tools = (
        u.filter(pl.col("tool"))
        .group_by(_GROUP, maintain_order=True)
        .agg(
            first_row=pl.col("row").first(),
            first_seq=pl.col("seq").first(),
            had_content=pl.col("has_content").any(),
            **last,
        )
    )
    after = pl.when("had_content").then(pl.col("content")).otherwise(pl.col("raw").fill_null(""))
    return tools.with_columns(text=pl.col("status").fill_null("") + after)


def _duplicated(u: pl.DataFrame) -> pl.DataFrame:
    """A whole update after the first of its message; a tool_call after its id's first update."""
    group = _GROUP
    whole = u.filter(~pl.col("tool") & ~pl.col("chunk")).filter(
        pl.int_range(pl.len()).over(group) > 0
    )
    calls = u.filter(pl.col("tool")).filter(
        (pl.col("kind") == "tool_call") & (pl.int_range(pl.len()).over(group) > 0)
    )
    return (
        pl.concat(
            [whole.select("span", "row", *group[1:]), calls.select("span", "row", *group[1:])]
        )
        .sort("span", "row")
        .rename({"mkind": "kind"})
    )


def _chunk_first(said: pl.DataFrame, u: pl.DataFrame) -> pl.DataFrame:
    """The first chunk of each message whose chunks came before its whole update (if any)."""
    first = pl.col("first_chunk")
    before = first.is_not_null() & (
        pl.col("first_whole").is_null() | (first < pl.col("first_whole"))
    )
    found = said.filter(before).select("span", pl.col("first_chunk").alias("row"), "mkind", "key")
    return (
        found.join(u.select("span", "row", "seq"), on=["span", "row"])
        .select("span", "row", "seq", pl.col("mkind").alias("kind"), "key")
        .sort("span", "row")
    )
