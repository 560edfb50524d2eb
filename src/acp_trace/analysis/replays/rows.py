"""The rows the replay pass reads: requests, responses, notifications and tap events, with
runs of plain history updates of one session folded into one row each (counted at once)."""

from __future__ import annotations

import polars as pl

from acp_trace.jsonrpc import MESSAGE_KINDS

COLUMNS = (
    "row",
    "trace",
    "src",
    "kind",
    "method",
    "id",
    "session",
    "update_class",
    "update_kind",
    "update_session",
    "peer_row",
    "error_code",
    "bytes",
    "event",
    "text",
    "protocol",
    "request_method",
    "vendor_end",
    "has_message_id",
)


PASS_KINDS = ("request", "response", "error", "notification", "event")


def pass_rows(tl: pl.DataFrame) -> pl.DataFrame:
    """The rows the pass reads, trace by trace (in order of first appearance), with each run of
    consecutive plain history updates of one session folded into one row (`plain`): its first
    row, `last_row`, `count`, `bytes_sum`, the `no_id_rows` without messageId and all `rows`.
    A plain update changes no state but its session's counts, so a run counts at once."""
    runs = _runs(tl)
    heads = tl.select(COLUMNS[:-1])[runs["row"]]  # the first row of each run, all its columns
    folded = heads.hstack(runs.drop("row").get_columns())
    first_seen = pl.int_range(pl.len()).first().over("trace")
    return folded.sort(first_seen, maintain_order=True)


def _runs(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per run (see `pass_rows`), computed from a few narrow columns of the rows the
    pass reads (the timeline itself, `msg` above all, is not copied). Whether a message has
    its messageId is the reader's `has_message_id`: no message is parsed again here."""
    session, trace, row = pl.col("session"), pl.col("trace"), pl.col("row")
    plain = (
        (pl.col("kind") == "notification")
        & (pl.col("src") == "agent")
        & (pl.col("method") == "session/update")
        & (pl.col("update_class") == "history")
        & (pl.col("update_kind") != "subagent_update")
        & (session.fill_null("") != "")
    ).fill_null(False)
    narrow = (
        tl.lazy()
        .filter(pl.col("kind").is_in(PASS_KINDS))
        .select(
            row,
            trace,
            session,
            pl.col("bytes"),
            pl.when(pl.col("update_kind").is_in(sorted(MESSAGE_KINDS)))
            .then(pl.col("has_message_id"))
            .otherwise(None)
            .alias("has_message_id"),
            plain.alias("plain"),
        )
        .collect()
    )
    is_plain = pl.col("plain")
    starts = ~is_plain | ~is_plain.shift(1, fill_value=False)
    starts = starts | (session != session.shift(1)) | (trace != trace.shift(1))
    return (
        narrow.with_columns(starts.fill_null(True).cum_sum().alias("run"))
        .group_by("run", maintain_order=True)
        .agg(
            row.first(),
            pl.col("has_message_id").first(),
            is_plain.first(),
            row.last().alias("last_row"),
            pl.len().alias("count"),
            pl.col("bytes").sum().alias("bytes_sum"),
            row.filter(pl.col("has_message_id").not_()).alias("no_id_rows"),
            row.alias("rows"),
        )
        .drop("run")
    )
