"""Folding settled records out of what the watch's analyzer reads again at every run, so that
a run costs the same at the thousandth replay as at the first.

A trace is cut into windows at quiet points: a request sent while every request before it
(either side's) has its response. No rule of `check` pairs anything across such a point: a
replay, a prompt turn, a cancel and its answer all end before it; a replay's late marker or a
v1 load's late history come before the next request. Once a run has analyzed every record up
to the newest quiet point, what lies before it is settled: its findings and outcomes are out,
and the next runs read only the **context** of it, the few rows the rules of later records
look back at:

- the header and the tap's events (exit, drops, errors: the losses rules);
- the `initialize` exchange (protocol version and capabilities: schema, subagent rules) and
  each `session/new` and `session/fork` exchange (the sessions of the connection);
- per child session and kind, the first `subagent_update`, `session_message` and
  `session_message_chunk` (the announce and the first unadvertised one), and per session the
  first live update and the first agent request (what the announce rule compares with);
- the answer of every request kept (nothing kept is left pending).

That context grows with the connection's sessions and children, not with its records.
Findings at records before the cut are never reported again (`Judge`: `cut_seq`), nor is a
schema break `check` reports once at its first message (`like`).

Without a quiet point (a prompt turn streaming for minutes, a client that always has a
request pending), `trim` lets go of the bulky rows already analyzed before the oldest replay
still open: the history-kind updates (message chunks, tool calls, plans) and the stderr lines.
Markers, state snapshots, subagent and live updates, requests and responses stay, so no rule
sees a replay without its marker; the rules that fire on such rows have fired when they were
analyzed. One replay streaming for minutes is bounded by `thin`: its analyzed history-kind
updates but the newest go too (counted: its history counts stay whole).
"""

from __future__ import annotations

import io
import re

import polars as pl

from acp_trace.jsonrpc import HISTORY_KINDS

CONTEXT_METHODS = ("initialize", "session/new", "session/fork")
SUBAGENT_KINDS = ("subagent_update", "session_message", "session_message_chunk")
BULKY_KINDS = sorted(HISTORY_KINDS - set(SUBAGENT_KINDS))


_MORE = re.compile(r" \(and [\d,]+ more[^)]*\)")
_ID = re.compile(r"\(id [^)]*\)")
_AT_SEQ = re.compile(r" at seq \d+")
_INDEX = re.compile(r"\[\d+\]")


def like(rule: str, message: str) -> str | None:
    """For `schema-invalid`, which `check` reports once per way a message breaks the schema
    (at its first message, "and 14 more like it"): that way, the message's text without its
    record and without what it quotes of the first message (so a later window's first
    message of the same break is no new finding); None for the other rules. The text stands
    for `check`'s grouping (kind, method, type, place, keyword): a break whose text quotes
    values ("got 0") may be said again when a later window's first message quotes others."""
    if rule != "schema-invalid":
        return None
    head = stem(message).split("; the schema says", 1)[0].split("; it has ", 1)[0]
    return _INDEX.sub("[*]", _AT_SEQ.sub("", _ID.sub("(id)", head)))


def stem(message: str) -> str:
    """A finding's message without the count of the others like it ("(and 3 more in this
    replay)"): that count grows as records arrive, the finding is the same."""
    return _MORE.sub("", message)


def quiet_cut(tl: pl.DataFrame, start: int) -> int | None:
    """The row of the newest request at or after `start` sent while every request before it
    (of either side) had its response: the first row of the newest window; None when there is
    none."""
    requests = tl.filter(pl.col("kind") == "request").select(
        "row", pl.col("peer_row").cast(pl.Int64).fill_null(2**62).alias("end")
    )
    if requests.is_empty():
        return None
    before = requests.with_columns(pl.col("end").cum_max().shift(1).fill_null(-1).alias("before"))
    cuts = before.filter((pl.col("row") >= start) & (pl.col("before") < pl.col("row")))
    return None if cuts.is_empty() else int(cuts["row"][-1])


def context_rows(tl: pl.DataFrame, cut: int) -> pl.Series:
    """The rows before `cut` that the later records' rules look back at (see the module)."""
    old = tl.head(cut)
    kind, method = pl.col("kind"), pl.col("method")
    opening = (kind == "request") & method.is_in(CONTEXT_METHODS)
    answers = kind.is_in(["response", "error"]) & pl.col("request_method").is_in(CONTEXT_METHODS)
    plain = old.filter(
        kind.is_in(["header", "event", "skipped"]) | (pl.col("src") == "tap") | opening | answers
    )["row"]
    agent = pl.col("src") == "agent"
    child = old.filter(agent & pl.col("update_kind").is_in(SUBAGENT_KINDS)).unique(
        ["trace", "update_session", "update_kind"], keep="first", maintain_order=True
    )["row"]
    carrying = (
        old.filter(
            agent
            & (
                (pl.col("update_class") == "live")
                | ((kind == "request") & (method != "session/update"))
            )
        )
        .with_columns((kind == "request").alias("asks"))
        .unique(["trace", "session", "asks"], keep="first", maintain_order=True)["row"]
    )
    rows = pl.concat([plain, child, carrying]).unique()
    peers = old.filter(pl.col("row").is_in(rows.implode()) & (kind == "request"))["peer_row"]
    return pl.concat([rows, peers.drop_nulls()]).unique().sort()  # a request with its answer


def fold(records: pl.DataFrame, tl: pl.DataFrame, cut: int) -> pl.DataFrame:
    """The records less the rows before `cut` that are not context, copied (a filtered frame's
    strings are views that would keep every old buffer alive)."""
    keep = context_rows(tl, cut)
    index = pl.int_range(pl.len(), dtype=pl.UInt32)
    kept = records.filter(index.is_in(keep.implode()) | (index >= cut))
    return copy(kept)


def trim(records: pl.DataFrame, until_t_ns: int | None, until_line: int) -> pl.DataFrame | None:
    """The records less the bulky rows (see the module) stamped before `until_t_ns` (the
    oldest replay still open; None: none is) and read at or before line `until_line` (every
    row analyzed); None when there is none to let go."""
    bulky = (
        (pl.col("kind") == "notification")
        & (pl.col("method") == "session/update")
        & pl.col("update_kind").is_in(BULKY_KINDS)
    ) | (pl.col("src") == "stderr")
    settled = pl.col("t_ns").is_not_null() & (pl.col("line") <= until_line)
    if until_t_ns is not None:
        settled = settled & (pl.col("t_ns") < until_t_ns)
    drop = bulky & settled
    if not records.select(drop.any()).item():
        return None
    return copy(records.filter(~drop))


def thin(
    records: pl.DataFrame, until_line: int
) -> tuple[pl.DataFrame, dict[str, tuple[int, int]]] | None:
    """The records less every history-kind update read at or before line `until_line` but
    the newest of each session (its stamp is the replay's last history), and per session the
    updates and bytes let go; None when there is none to let go. For a replay streaming for
    minutes: what is kept stays bounded, and its history counts are the analyzer's plus what
    was let go."""
    bulky = (
        (pl.col("kind") == "notification")
        & (pl.col("method") == "session/update")
        & pl.col("update_kind").is_in(BULKY_KINDS)
        & (pl.col("line") <= until_line)
    )
    ones = bulky.cast(pl.Int64)
    by = pl.col("session_id")
    newest = ones.cum_sum().over(by) == ones.sum().over(by)
    flagged = records.with_columns((bulky & ~newest).alias("_drop"))
    dropped = flagged.filter("_drop")
    if dropped.is_empty():
        return None
    let_go = (
        dropped.filter(pl.col("session_id").is_not_null())
        .group_by("session_id")
        .agg(pl.len(), pl.col("bytes").sum())
    )
    sessions = {s: (int(n), int(b or 0)) for s, n, b in let_go.iter_rows()}
    return copy(flagged.filter(~pl.col("_drop")).drop("_drop")), sessions


def copy(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame that owns its buffers: written to Arrow IPC in memory and read back, so the
    strings are copied and no buffer of the frames it came from is kept. (A round trip
    through pyarrow, `from_arrow(to_arrow())`, left about 1.3 MB of pyarrow's memory
    allocated for every hundred replays a watcher followed, with a single frame alive:
    docs/performance.md, "The screen over minutes".)"""
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    buffer.seek(0)
    copied = pl.read_ipc(buffer)
    return copied if copied.schema == frame.schema else frame
