"""The report's answer to "what would a client have suffered?" (rules.md "Replay weight, client
limits and deadlines"): per agent, the heaviest replays and their largest lines against the
known client limits, the longest silences against the known deadlines, and the history updates
a client that guesses the end of a replay from a quiet window would have taken for live ones.
Like the rest of the report it names lines by kind, tool, seq and size, never by what they
said."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.quantities import count, counted, duration
from acp_trace.render.report.context import Context, capped
from acp_trace.render.report.document import Block, Heading, Paragraph
from acp_trace.render.weight_facts import quiet_text, tool_of
from acp_trace.weight import WeightOptions

HEADING = "What a client would have suffered"
PER_AGENT = {True: 20, False: 3}  # rows per agent in each table: HTML (full), Markdown
AGENT_COLUMNS = ["agent", "version", "replays", "heaviest bytes", "largest line bytes",
                 "over limit", "longest silence ms", "past deadline", "cut short",
                 "taken for live"]  # fmt: skip
HEAVY_COLUMNS = ["agent", "version", "session", "history bytes", "children bytes", "line kind",
                 "tool", "line bytes", "over limit", "seq", "trace"]  # fmt: skip
SILENCE_COLUMNS = ["agent", "version", "session", "method", "silence ms", "past deadline",
                   "response ms", "trace"]  # fmt: skip
QUIET_COLUMNS = ["agent", "version", "session", "quiet end ms", "history updates",
                 "taken for live", "response ms", "trace"]  # fmt: skip


def suffered(ctx: Context) -> list[Block]:
    """Per agent and version the worst of each, then the replays behind them."""
    frame = _frame(ctx)
    blocks: list[Block] = [Heading(2, HEADING)]
    if not frame.height:
        return [*blocks, Paragraph("No replaying session/resume or session/load to weigh.")]
    o: WeightOptions = ctx.a.weight
    blocks.append(Paragraph(_intro(o)))
    agents, more = capped(ctx, _per_agent(frame), ctx.limits.agents, "agent row")
    rows = [
        [*r[:5], _passed(o, "limit", r[4]), r[5], _passed(o, "deadline", r[5]), *r[6:]]
        for r in agents.iter_rows()
    ]
    blocks += [ctx.table(AGENT_COLUMNS, rows, {2, 3, 4, 6, 8, 9}), *more]
    blocks += _heaviest(ctx, frame)
    blocks += _silences(ctx, frame)
    return blocks + _quiet(ctx, frame, o)


def _frame(ctx: Context) -> pl.DataFrame:
    """The replays table's identity and weight columns, with the limit and deadline each
    passes and the tool of its largest line."""
    a = ctx.a
    o: WeightOptions = a.weight
    keep = ["trace", "session", "method", "agent", "agent_version", "history_bytes",
            "history_updates", "children_bytes", "largest_update_bytes", "largest_update_kind",
            "largest_update_seq", "longest_silence_ms", "quiet_end_ms",
            "updates_after_quiet_end", "response_ms"]  # fmt: skip
    frame = a.replays.select(keep).with_row_index("row")
    limits = [_passed(o, "limit", v) for v in frame["largest_update_bytes"].to_list()]
    deadlines = [_passed(o, "deadline", v) for v in frame["longest_silence_ms"].to_list()]
    return frame.with_columns(
        pl.Series("limit", limits, pl.String),
        pl.Series("deadline", deadlines, pl.String),
        (pl.col("history_bytes") + pl.col("children_bytes").fill_null(0)).alias("weight"),
    )


def _passed(o: WeightOptions, what: str, value: float | None) -> str | None:
    if value is None:
        return None
    found = (
        o.largest_limit_passed(int(value)) if what == "limit" else o.largest_deadline_passed(value)
    )
    return None if found is None else found.name


def _intro(o: WeightOptions) -> str:
    limits = ", ".join(t.name for t in o.limits) or "none"
    deadlines = ", ".join(t.name for t in o.deadlines) or "none"
    return (
        f"Each replay against the known client limits on one line ({limits}) and deadlines "
        f"({deadlines}); --frame-limit and --deadline add your own (docs/rules.md). A client "
        "that takes a replay for over after "
        f"{quiet_text(o.quiet_window_ms, o.quiet_cap_ms)} takes the history updates after that "
        "moment for live ones: cut short counts such replays, taken for live their updates."
    )


def _per_agent(frame: pl.DataFrame) -> pl.DataFrame:
    """Per agent and version: the heaviest replay, the largest line, the longest silence, the
    replays a quiet-window client cuts short and the updates it takes for live."""
    taken = pl.col("updates_after_quiet_end")
    return (
        frame.group_by("agent", "agent_version", maintain_order=True)
        .agg(
            pl.len().alias("replays"),
            pl.col("weight").max(),
            pl.col("largest_update_bytes").max(),
            pl.col("longest_silence_ms").max(),
            (taken.fill_null(0) > 0).sum().alias("cut short"),
            taken.sum().alias("taken"),
        )
        .sort("agent", "agent_version", nulls_last=True)
    )


def _top(ctx: Context, frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """The rows with the largest `by` of each agent and version (PER_AGENT of them)."""
    n = PER_AGENT[ctx.limits.full]
    ranked = frame.filter(pl.col(by).is_not_null()).sort(by, descending=True, maintain_order=True)
    return ranked.group_by("agent", "agent_version", maintain_order=True).head(n)


def _heaviest(ctx: Context, frame: pl.DataFrame) -> list[Block]:
    top = _top(ctx, frame, "weight")
    if not top.height:
        return []
    shown, more = capped(ctx, top, ctx.limits.replays, "replay row")
    tl, weights = ctx.a.timeline, ctx.a.weights
    rows = [
        [r["agent"], r["agent_version"], r["session"], r["history_bytes"], r["children_bytes"],
         r["largest_update_kind"], tool_of(tl, weights[r["row"]].largest_row),
         r["largest_update_bytes"], r["limit"], r["largest_update_seq"], ctx.trace(r["trace"])]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    heading = Heading(3, "The heaviest replays and their largest lines")
    return [heading, ctx.table(HEAVY_COLUMNS, rows, {3, 4, 7, 9}), *more]


def _silences(ctx: Context, frame: pl.DataFrame) -> list[Block]:
    top = _top(ctx, frame, "longest_silence_ms")
    if not top.height:
        return []
    shown, more = capped(ctx, top, ctx.limits.replays, "replay row")
    rows = [
        [r["agent"], r["agent_version"], r["session"], r["method"], r["longest_silence_ms"],
         r["deadline"], r["response_ms"], ctx.trace(r["trace"])]
        for r in shown.iter_rows(named=True)
    ]  # fmt: skip
    text = (
        "The longest time inside each window with no line from the agent (stderr does not "
        "count), against the deadlines a client gives a request."
    )
    heading = Heading(3, "The longest silences")
    return [heading, Paragraph(text), ctx.table(SILENCE_COLUMNS, rows, {4, 6}), *more]


def _quiet(ctx: Context, frame: pl.DataFrame, o: WeightOptions) -> list[Block]:
    cut = frame.filter(pl.col("updates_after_quiet_end").fill_null(0) > 0)
    heading = Heading(3, "What a quiet-window client would have taken for live")
    if not cut.height:
        text = (
            f"A client that waits {duration(o.quiet_window_ms)} with no update would have "
            "read every replay whole: no history update came after its quiet-window end."
        )
        return [heading, Paragraph(text)]
    top = _top(ctx, cut, "updates_after_quiet_end")
    shown, more = capped(ctx, top, ctx.limits.replays, "replay row")
    rows = [_quiet_row(ctx, r) for r in shown.iter_rows(named=True)]
    total = int(cut["updates_after_quiet_end"].sum())
    text = (
        f"{counted(cut.height, 'replay')} of {count(frame.height)} would have been cut short, "
        f"{counted(total, 'history update')} taken for live traffic (quiet end: ms after the "
        "request)."
    )
    return [heading, Paragraph(text), ctx.table(QUIET_COLUMNS, rows, {3, 4, 5, 6}), *more]


def _quiet_row(ctx: Context, r: dict[str, Any]) -> list[Any]:
    return [r["agent"], r["agent_version"], r["session"], r["quiet_end_ms"],
            r["history_updates"], r["updates_after_quiet_end"], r["response_ms"],
            ctx.trace(r["trace"])]  # fmt: skip
