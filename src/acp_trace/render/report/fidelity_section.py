"""The report's answer to "is the replay the session?" (rules.md "Replay fidelity"): per agent,
how many replays were compared and what differed, then the worst replay's differences. Like
the rest of the report it names messages by kind, id, seq and size, never by what they said."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.fidelity import ReplayFidelity
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted
from acp_trace.render.fidelity import describe_source
from acp_trace.render.report.context import Context, capped
from acp_trace.render.report.document import Block, Heading, Paragraph

COUNTS = (
    ("missing", "replay_missing"),
    ("extra", "replay_extra"),
    ("repeated", "replay_duplicated"),
    ("new ids", "replay_id_changed"),
    ("reordered", "replay_reordered"),
    ("cut", "replay_truncated"),
)
AGENT_COLUMNS = ["agent", "version", "replays", "compared", "faithful", *[c for c, _ in COUNTS],
                 "bytes cut"]  # fmt: skip
DIFF_COLUMNS = ["difference", "kind", "source id", "source seq", "replayed id", "seq", "bytes"]
WORST_SHOWN = 20  # differences of the worst replay a Markdown report lists


def fidelity(ctx: Context) -> list[Block]:
    """Per agent and version: replays, those with a source, those with no difference, and the
    sums of each count; then the replay with the most differences, its first ones listed."""
    frame = _frame(ctx)
    blocks: list[Block] = [Heading(2, "Is the replay the session?")]
    compared = frame.filter(pl.col("source").is_not_null())
    if not compared.height:
        text = (
            "No replay could be compared: none of these traces holds an earlier replay or a "
            "prompt turn of a replayed session (record the session live, or give the earlier "
            "recording too)."
        )
        return [*blocks, Paragraph(text)]
    blocks.append(Paragraph(_intro(frame, compared)))
    per_agent, more = capped(ctx, _per_agent(frame), ctx.limits.agents, "agent row")
    rows = [list(r) for r in per_agent.iter_rows()]
    numeric = set(range(2, len(AGENT_COLUMNS)))
    blocks += [ctx.table(AGENT_COLUMNS, rows, numeric), *more]
    return blocks + _worst(ctx, frame)


def _frame(ctx: Context) -> pl.DataFrame:
    """The replays table's identity and fidelity columns with each row's difference count."""
    found: list[ReplayFidelity] = ctx.a.fidelity
    diffs = pl.Series("differences", [len(f.differences) for f in found], pl.Int64)
    keep = ["trace", "session", "method", "request_id", "agent", "agent_version", "source",
            *[c for _, c in COUNTS], "replay_truncated_bytes"]  # fmt: skip
    return ctx.a.replays.select(keep).with_columns(diffs).with_row_index("row")


def _intro(frame: pl.DataFrame, compared: pl.DataFrame) -> str:
    faithful = compared.filter(pl.col("differences") == 0).height
    return (
        f"{counted(compared.height, 'replay')} of {count(frame.height)} could be set against "
        f"the session as the traces recorded it (its earlier replay and prompt turns); "
        f"{count(faithful)} carried every message whole, in order and under its id "
        "(acp-trace fidelity lists each difference; v2 allows a replay to leave messages out)."
    )


def _per_agent(frame: pl.DataFrame) -> pl.DataFrame:
    src = pl.col("source").is_not_null()
    sums = [pl.col(c).sum().alias(name) for name, c in COUNTS]
    return (
        frame.group_by("agent", "agent_version", maintain_order=True)
        .agg(
            pl.len().alias("replays"),
            src.sum().alias("compared"),
            (src & (pl.col("differences") == 0)).sum().alias("faithful"),
            *sums,
            pl.col("replay_truncated_bytes").sum().alias("bytes cut"),
        )
        .sort("agent", "agent_version", nulls_last=True)
    )


def _worst(ctx: Context, frame: pl.DataFrame) -> list[Block]:
    worst = frame.filter(pl.col("differences") > 0).sort("differences", descending=True)
    if not worst.height:
        return []
    r = worst.row(0, named=True)
    f: ReplayFidelity = ctx.a.fidelity[r["row"]]
    text = (
        f"The replay with the most differences ({count(r['differences'])}): "
        f"{ctx.cell(r['method'])} of session {ctx.cell(r['session'])} (request id "
        f"{ctx.cell(r['request_id'])}) in {ctx.cell(ctx.trace(r['trace']))}, against "
        f"{_source(ctx, f)}. See them all: acp-trace fidelity TRACE... --session ID."
    )
    limit = None if ctx.limits.full else WORST_SHOWN
    shown = f.differences if limit is None else f.differences[:limit]
    rows = [_row(d) for d in shown]
    blocks: list[Block] = [Paragraph(text), ctx.table(DIFF_COLUMNS, rows, {3, 5, 6})]
    if len(shown) < len(f.differences):
        rest = len(f.differences) - len(shown)
        blocks.append(Paragraph(f"{counted(rest, 'more difference')}: see acp-trace fidelity."))
    return blocks


def _source(ctx: Context, f: ReplayFidelity) -> str:
    where = f"{ctx.cell(ctx.trace(f.source_trace))} seq {f.source_seq}"
    return describe_source(f.source or "", f.source_replay, f.source_turns, where)


def _row(d: Any) -> list[Any]:
    size = d.replay_bytes if d.replay_bytes is not None else d.source_bytes
    ident = _ident(d.source_id), d.source_seq, _ident(d.replay_id), d.replay_seq
    return [d.what.replace("_", " "), d.kind, ident[0], ident[1], ident[2], ident[3], size]


def _ident(value: Any) -> str | None:
    return None if value is None else json_text(value)
