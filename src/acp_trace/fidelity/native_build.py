"""The native path's messages: every span's messages and tool calls built at once with polars
group-bys on (span, kind, id), as `messages.build` builds them; a chunk with no id (every chunk
of v1) joins the run of chunks of its kind before it, which any other record of the agent
ends: the runs are numbered by a cumulative sum, each record knowing the agent's record before
it in its trace.

A span here is a number and (trace, session, start row, stop row, v2): its updates are the
agent's fidelity updates on its session strictly after the start row and before the stop row,
found by one search in the candidate rows sorted by (trace, session, row)."""

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
    "v2": pl.Boolean,  # v1: every chunk is one of a run (its messageId is not read)
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
    """(span, row, seq, kind, prev, v2) of each fidelity update inside each span, by span then
    row: `prev` is the row of the agent's record before it in its trace, whatever it is (a
    run of chunks ends at any other record), null when that is not inside the span."""
    pairs = spans.select("trace", "session").unique().with_row_index("g")
    shift = pl.col("g").cast(pl.Int64) * (1 << 32)
    cand = (
        tl.lazy()
        .filter(_AGENT)
        .with_columns(prev=pl.col("row").shift(1).over("trace"))
        .filter(_WANTED)
        .select("row", "seq", "trace", "session", pl.col("update_kind").alias("kind"), "prev")
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
    reach = pl.DataFrame(
        {"span": bounds["span"], "start": bounds["start"], "v2": bounds["v2"], "lo": lo, "hi": hi}
    ).with_columns(hi=pl.max_horizontal("lo", "hi"))
    at = reach.select(
        "span", "start", "v2", pl.int_ranges("lo", "hi", dtype=pl.Int64).alias("i")
    ).explode("i")
    at = at.drop_nulls("i")
    picked = cand.select("row", "seq", "kind", "prev")[at["i"]]
    inside = pl.col("prev").cast(pl.Int64) > pl.col("start")
    return (
        picked.with_columns(at.select("span", "start", "v2"))
        .with_columns(prev=pl.when(inside).then(pl.col("prev")))
        .drop("start")
        .sort("span", "row")
    )


def _build(updates: pl.DataFrame, read: ReadRows) -> BuiltSpans:
    whole = updates.join(read.frame(), on="row", how="left", maintain_order="left")
    python = set(whole.filter(pl.col("row").is_in(list(read.unprovable)))["span"].to_list())
    u = whole.filter(~pl.col("span").is_in(list(python))).with_columns(
        tool=pl.col("kind").is_in(["tool_call", "tool_call_update"]),
        chunk=pl.col("kind").is_in(_CHUNKS),
    )
    u = u.with_columns(
        mkind=pl.when("tool")
        .then(pl.lit("tool_call"))
        .otherwise(pl.col("kind").str.strip_suffix("_chunk")),
        key=pl.when(pl.col("chunk") & ~pl.col("v2")).then(None).otherwise(pl.col("key")),
    )
    u = _runs(u).filter("ok")
    said, tools = _said(u), _tools(u)
    cols = ["span", "mkind", "key", "first_row", "first_seq", "text"]
    messages = (
        pl.concat([said.select(cols), tools.select(cols)])
        .sort("span", "first_row")
        .with_columns(idx=pl.int_range(pl.len()).over("span"), bytes=pl.col("text").str.len_bytes())
        .rename({"mkind": "kind"})
    )
    return BuiltSpans(messages, _duplicated(u), _chunk_first(said, u), python, read.ids)


def _runs(u: pl.DataFrame) -> pl.DataFrame:
    """`group`, what makes a message: its id's key; for a chunk with no id (every chunk of v1)
    its run, the chunks of one kind with no other record of the agent between them; any other
    update with no id is a message of its own (`messages._Builder`)."""
    run = pl.col("ok").fill_null(False) & pl.col("chunk") & pl.col("key").is_null()
    u = u.with_columns(run=run)
    before = pl.col("row").shift(1).over("span")
    goes_on = (
        pl.col("run")
        & pl.col("run").shift(1).over("span").fill_null(False)
        & (pl.col("mkind").shift(1).over("span") == pl.col("mkind")).fill_null(False)
        & (before == pl.col("prev")).fill_null(False)
    )
    number = (pl.col("run") & ~goes_on).cast(pl.Int64).cum_sum().over("span")
    group = (
        pl.when("run")
        .then(pl.concat_str(pl.lit("#run"), number.cast(pl.String)))
        .when(pl.col("key").is_null())
        .then(pl.concat_str(pl.lit("#row"), pl.col("row").cast(pl.String)))
        .otherwise(pl.col("key"))
    )
    return u.with_columns(group=group)


_GROUP = ["span", "mkind", "group"]


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
            key=pl.col("key").first(),
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
            key=pl.col("key").first(),
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
    cols = ["span", "row", pl.col("mkind").alias("kind"), "key"]  # a repeat has an id
    return pl.concat([whole.select(cols), calls.select(cols)]).sort("span", "row")


def _chunk_first(said: pl.DataFrame, u: pl.DataFrame) -> pl.DataFrame:
    """The first chunk of each message with an id whose chunks came before its whole update
    (if any)."""
    first = pl.col("first_chunk")
    before = (
        first.is_not_null()
        & pl.col("key").is_not_null()
        & (pl.col("first_whole").is_null() | (first < pl.col("first_whole")))
    )
    found = said.filter(before).select("span", pl.col("first_chunk").alias("row"), "mkind", "key")
    return (
        found.join(u.select("span", "row", "seq"), on=["span", "row"])
        .select("span", "row", "seq", pl.col("mkind").alias("kind"), "key")
        .sort("span", "row")
    )
