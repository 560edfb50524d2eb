"""Lines as a client reads them (rules.md "Replay weight"): each message row's line length (a
batch is one line: its elements, the brackets and the commas between them), what session and
update kind a line names, a record cut by the tap read for both from its first bytes."""

from __future__ import annotations

import polars as pl

from acp_trace.jsonrpc import HISTORY_KINDS

SIDES = ("client", "agent")  # a line's writer; stderr is no ACP line
LINE_KINDS = ("request", "response", "error", "notification", "text", "b64")
_SESSION = r'"sessionId"\s*:\s*"([^"\\]{1,256})"'
_UPDATE = r'"sessionUpdate"\s*:\s*"([^"\\]{1,128})"'


def line_rows(tl: pl.DataFrame) -> pl.DataFrame:
    """The rows that are (part of) a line of the client or the agent, in timeline order:
    `row`, `trace`, `src`, `seq`, `head` (the line's first row: a batch's element 0),
    `line_bytes` (the whole line's length; a cut record's announced length), `session` and
    `kind` (the update kind, else the method, else the row's kind; for a cut record what its
    first bytes name), `history` (a history-kind session/update), `t_ms`."""
    cut = pl.col("truncated").fill_null(False) & pl.col("kind").is_in(["text", "b64"])
    text = pl.col("text").fill_null("")
    part = pl.col("part")
    lines = (
        tl.lazy()
        .filter(pl.col("src").is_in(SIDES) & pl.col("kind").is_in(LINE_KINDS))
        .select(
            pl.col("row").cast(pl.Int64),
            "trace",
            "src",
            "seq",
            part,
            (part.is_null() | (part == 0)).alias("head"),
            pl.col("bytes").fill_null(0).cast(pl.Int64).alias("bytes"),
            pl.when(cut)
            .then(text.str.extract(_SESSION, 1))
            .otherwise(pl.col("session"))
            .alias("session"),
            pl.when(cut)
            .then(pl.coalesce(text.str.extract(_UPDATE, 1), pl.lit("cut line")))
            .otherwise(pl.coalesce("update_kind", "method", "kind"))
            .alias("kind"),
            (
                (pl.col("method") == "session/update")
                & pl.col("update_kind").is_in(sorted(HISTORY_KINDS))
                & (pl.col("kind") == "notification")
            )
            .fill_null(False)
            .alias("history"),
            (pl.col("method") == "session/update").fill_null(False).alias("is_update"),
            pl.col("t_ms"),
        )
    )
    batch = (
        lines.filter(part.is_not_null())
        .group_by("trace", "seq")
        .agg((pl.col("bytes").sum() + pl.len() + 1).alias("batch_bytes"))
    )
    return (
        lines.join(batch, on=["trace", "seq"], how="left", maintain_order="left")
        .with_columns(
            pl.when(part.is_not_null())
            .then(pl.col("batch_bytes"))
            .otherwise(pl.col("bytes"))
            .alias("line_bytes")
        )
        .drop("batch_bytes", "part")
        .collect()
    )


class AgentLines:
    """The agent's lines as sorted columns: the heads of its lines by row (for silences), and
    the rows naming a session sorted by (session, row), so that one session's rows strictly
    between two rows are one run of positions, found by a binary search (`runs`)."""

    def __init__(self, tl: pl.DataFrame, lines: pl.DataFrame) -> None:
        self.n = tl.height
        self.t = tl["t_ms"].cast(pl.Float64).fill_nan(None)  # by timeline row; None: untimed
        agent = lines.filter(pl.col("src") == "agent").with_columns(
            pl.col("t_ms").cast(pl.Float64).fill_nan(None)
        )
        self.heads = agent.filter(pl.col("head")).select("row", "t_ms")
        named = agent.filter(pl.col("session").is_not_null())
        self.codes = named.select("session").unique(maintain_order=True).with_row_index("code")
        self.named = (
            named.join(self.codes, on="session", how="left", maintain_order="left")
            .with_columns(key=pl.col("code").cast(pl.Int64) * (self.n + 1) + pl.col("row"))
            .sort("key")
        )

    def runs(self, sessions: list[str], lo: list[int], hi: list[int]) -> pl.DataFrame:
        """For each (session, lo, hi): where its rows strictly between rows lo and hi start
        and stop among the sorted rows (`start`, `stop`)."""
        query = pl.DataFrame(
            {"session": sessions, "lo": lo, "hi": hi},
            schema={"session": pl.String, "lo": pl.Int64, "hi": pl.Int64},
        ).join(self.codes, on="session", how="left", maintain_order="left")
        base = query["code"].cast(pl.Int64).fill_null(-1) * (self.n + 1)  # -1: no row
        key = self.named["key"]
        start = key.search_sorted(base + query["lo"], side="right").cast(pl.Int64)
        stop = key.search_sorted(base + query["hi"], side="left").cast(pl.Int64)
        found = pl.DataFrame({"start": start, "stop": stop})
        return found.with_columns(pl.max_horizontal("start", "stop").alias("stop"))
