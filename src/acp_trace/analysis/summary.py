"""`acp-trace summary`: one row per trace, with what went wrong while recording or reading."""

from __future__ import annotations

from typing import Any

import polars as pl

from acp_trace.analysis.timeline import Connection, connections
from acp_trace.jsonrpc import as_int, loads
from acp_trace.trace.format import header_timing


def summarize(records: pl.DataFrame) -> pl.DataFrame:
    """One row per trace: agent, protocol, sessions, counts by method and update kind, and
    everything that went wrong while recording or reading (malformed lines, lost records, the
    recorder's errors and the agents it had to kill, a trace removed while recording)."""
    records = records.filter(pl.col("kind") != "skipped")  # files that are no trace: not a row
    conns = connections(records)
    rows = []
    for trace, part in records.group_by("trace", maintain_order=True):
        name = str(trace[0])
        rows.append(_summary_row(name, part, conns[name]))
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA, orient="row")


SUMMARY_SCHEMA: dict[str, Any] = {
    "trace": pl.String,
    "agent": pl.String,
    "agent_version": pl.String,
    "client": pl.String,
    "protocol": pl.Int64,
    "timing": pl.String,
    "header": pl.Boolean,
    "sessions": pl.Int64,
    "messages": pl.Int64,
    "duration_ms": pl.Float64,
    "stderr_lines": pl.Int64,
    "malformed": pl.Int64,
    "malformed_lines": pl.List(pl.Int64),
    "lost_records": pl.Int64,
    "lost_gaps": pl.Int64,  # runs of missing seq numbers the lost records fall in
    "dropped": pl.Int64,
    "tap_errors": pl.List(pl.Struct({"seq": pl.Int64, "message": pl.String})),
    "kills": pl.List(pl.Struct({"seq": pl.Int64, "signal": pl.Int64, "reason": pl.String})),
    "trace_removed": pl.Boolean,
    "exit_code": pl.Int64,
    "exit_signal": pl.Int64,
    # the recorder's `account` (issue 26): lines the trace could not take, and whether the
    # recording ended as a recording should (an `exit` event; a balanced account when present)
    "unwritten": pl.Int64,
    "ended": pl.String,
    "by_method": pl.List(pl.Struct({"name": pl.String, "count": pl.Int64})),
    "by_update_kind": pl.List(pl.Struct({"name": pl.String, "count": pl.Int64})),
}


def _counts(part: pl.DataFrame, column: str) -> list[dict[str, Any]]:
    counted = part.filter(pl.col(column).is_not_null())[column].value_counts(sort=True)
    return [{"name": n, "count": c} for n, c in counted.iter_rows()]


def _dropped(text: str) -> int:
    """The lines a `dropped` event counts; one when its count is not a non-negative 64-bit
    integer (the event says that something was dropped, not how much)."""
    count = as_int(loads(text).get("count"))
    return count if count is not None and count >= 0 else 1


def _summary_row(trace: str, part: pl.DataFrame, conn: Connection) -> tuple[Any, ...]:
    messages = part.filter(pl.col("kind").is_in(["request", "response", "error", "notification"]))
    t = part["t_ns"].drop_nulls()
    seqs = part["seq"].drop_nulls().unique().sort()
    lost = int(seqs.max() - seqs.min() + 1 - seqs.len()) if seqs.len() else 0  # type: ignore[operator]
    gaps = int((seqs.diff() > 1).sum()) if seqs.len() > 1 else 0
    events = part.filter(pl.col("kind") == "event")
    dropped = sum(_dropped(x) for x in events.filter(pl.col("event") == "dropped")["text"])
    dropped = min(dropped, 2**63 - 1)  # an Int64 column
    errors, kills = _tap_problems(events)
    exits = [loads(x) for x in events.filter(pl.col("event") == "exit")["text"]]
    last_exit = exits[-1] if exits else {}
    header = part.filter(pl.col("kind") == "header")
    timing = header_timing(loads(header["text"][0]) if header.height else {})
    malformed = part.filter(pl.col("kind") == "malformed")["line"].to_list()
    return (
        trace,
        conn.agent,
        conn.agent_version,
        conn.client,
        conn.protocol,
        "ordering-only" if t.len() == 0 and messages.height else timing,
        header.height > 0,
        messages["session_id"].drop_nulls().n_unique(),
        messages.height,
        (t.max() - t.min()) / 1e6 if t.len() else None,  # type: ignore[operator]
        part.filter(pl.col("src") == "stderr").height,
        len(malformed),
        malformed,
        lost,
        gaps,
        dropped,
        [{"seq": seq, "message": str(e.get("message"))} for seq, e in errors],
        [
            {"seq": seq, "signal": as_int(k.get("signal")), "reason": str(k.get("reason"))}
            for seq, k in kills
        ],
        any(e.get("cause") == "removed" for _seq, e in errors),
        as_int(last_exit.get("code")),
        as_int(last_exit.get("signal")),
        *_account(events, bool(exits), header.height > 0 and not _imported(header)),
        _counts(messages, "method"),
        _counts(messages, "update_kind"),
    )


LOSS_COLUMNS = ("trace", "timing", "lost_records", "lost_gaps", "dropped", "unwritten", "ended")


def losses(summary: pl.DataFrame) -> pl.DataFrame:
    """The traces whose recording lacks something, from `summarize`'s table: records missing
    from the seq run, lines the tap dropped or could not write, or a recording that did not
    end as one should (`ended` other than `complete`; an imported trace, `unknown`, is not a
    loss). Findings about what a trace lacks cannot be made: `check` and the report say so."""
    return summary.select(LOSS_COLUMNS).filter(
        (pl.col("lost_records") > 0)
        | (pl.col("dropped") > 0)
        | (pl.col("unwritten").fill_null(0) > 0)
        | pl.col("ended").is_in(["no exit", "unbalanced"])
    )


def _imported(header: pl.DataFrame) -> bool:
    head = loads(header["text"][0])
    return isinstance(head, dict) and "imported_from" in head


def _account(events: pl.DataFrame, exited: bool, recorded: bool) -> tuple[int | None, str]:
    """(lines not written, how the recording ended): `complete` (an `exit` event and, when
    there is one, a balanced `account`), `no exit` (the recorder was killed or the trace cut
    short), `unbalanced` (an account whose numbers do not add up), `unknown` (not recorded by
    the tap: an imported trace)."""
    texts = events.filter(pl.col("event") == "account")["text"]
    streams = loads(texts[-1]).get("streams") if texts.len() else None
    unwritten: int | None = None
    balanced = True
    if isinstance(streams, dict):
        unwritten = 0
        for counts in streams.values():
            numbers = {k: as_int(counts.get(k)) or 0 for k in ("lines", "recorded", "dropped")}
            missing = as_int(counts.get("unwritten")) or 0
            unwritten += missing
            balanced &= numbers["recorded"] + numbers["dropped"] + missing == numbers["lines"]
    if not recorded:
        return unwritten, "unknown"
    if not exited:
        return unwritten, "no exit"
    return unwritten, "complete" if balanced else "unbalanced"


def _tap_problems(
    events: pl.DataFrame,
) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, dict[str, Any]]]]:
    """The recorder's `error` events and its `kill` events (the agent it had to end), with seq."""
    found: dict[str, list[tuple[int, dict[str, Any]]]] = {"error": [], "kill": []}
    for seq, name, text in (
        events.filter(pl.col("event").is_in(list(found))).select("seq", "event", "text").rows()
    ):
        detail = loads(text)
        found[name].append((seq, detail if isinstance(detail, dict) else {}))
    return found["error"], found["kill"]
