"""The timeline: records plus pairing, session attribution, update classes and connection facts.

`timeline(records)` returns the records table with these columns added:

- `row`: position in the table (stable key for joins);
- `t_ms`: `t_ns` in milliseconds (null for ordering-only imports);
- `update_class`: `history`, `live`, `marker`, `vendor` (a vendor end-of-replay event,
  `analysis/vendor_events.py`) or `unknown` for session/update rows;
- `vendor_end`: the path of the vendor end-of-replay event a session/update carries, else null;
- `peer_row`: for a response the row of its request, for a request the row of its response;
- `request_method`: for a response, the method of the request it answers;
- `latency_ms`: request to response, on both rows of a pair;
- `session`: the ACP session of the row (a response inherits its request's session);
- `orphan`: a response that answers no pending request of the other side;
- `duplicate_id`: a request whose id its sender still has pending;
- `protocol`, `agent`, `agent_version`: facts of the trace's connection (from initialize).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from acp_trace.analysis.vendor_events import VendorEvent, first_match, registry
from acp_trace.jsonrpc import (
    HISTORY_KINDS,
    LIVE_KINDS,
    MARKER_KIND,
    agent_name,
    as_dict,
    as_int,
    as_str,
    loads,
)


@dataclass(frozen=True)
class Connection:
    """What the initialize exchange of one trace says."""

    trace: str
    protocol: int | None
    agent: str | None
    agent_version: str | None
    client: str | None


def timeline(records: pl.DataFrame, *, marker_meta: str | None = None) -> pl.DataFrame:
    """Add pairing, sessions, update classes and connection facts to a records table."""
    df = records.with_row_index("row").with_columns(
        (pl.col("t_ns") / 1e6).alias("t_ms"),
        _update_class_expr(),
    )
    df = _mark_vendor_events(df, registry(marker_meta))
    df = _attach(df, "row", _pairs(df))
    df = df.with_columns(
        pl.when(
            pl.col("kind").is_in(["response", "error"])
            & pl.col("session_id").is_null()
            & pl.col("peer_row").is_not_null()
        )
        .then(pl.col("session_id").gather(pl.col("peer_row").fill_null(0)))
        .otherwise(pl.col("session_id"))
        .alias("session"),
    )
    conns = connections(records)
    facts = pl.DataFrame(
        [(c.trace, c.protocol, c.agent, c.agent_version) for c in conns.values()],
        schema={
            "trace": pl.String,
            "protocol": pl.Int64,
            "agent": pl.String,
            "agent_version": pl.String,
        },
        orient="row",
    )
    return _attach(df, "trace", facts)


def _attach(df: pl.DataFrame, key: str, table: pl.DataFrame) -> pl.DataFrame:
    """`df` plus the columns of `table` (unique in `key`) matched on `key`: a left join that
    copies only the new columns, so the records' own (`msg` above all) stay shared. When the
    table has one row and `df` holds only its key (one trace), the columns are constants."""
    if table.height == 1 and df.height and df[key].n_unique() == 1 and df[key][0] == table[key][0]:
        values = table.row(0, named=True)
        new = (pl.lit(values[n], dtype=t).alias(n) for n, t in table.schema.items() if n != key)
        return df.with_columns(new)
    matched = df.select(key).join(table, on=key, how="left", maintain_order="left")
    return df.hstack(matched.drop(key).get_columns())


def _update_class_expr() -> pl.Expr:
    kind = pl.col("update_kind")
    return (
        pl.when(pl.col("method") != "session/update")
        .then(None)
        .when(pl.col("method").is_null())
        .then(None)
        .when(kind == MARKER_KIND)
        .then(pl.lit("marker"))
        .when(kind.is_in(sorted(HISTORY_KINDS)))
        .then(pl.lit("history"))
        .when(kind.is_in(sorted(LIVE_KINDS)))
        .then(pl.lit("live"))
        .otherwise(pl.lit("unknown"))
        .alias("update_class")
    )


def _mark_vendor_events(df: pl.DataFrame, events: tuple[VendorEvent, ...]) -> pl.DataFrame:
    """A session/update of the agent that carries a vendor end-of-replay event is of class
    `vendor` (neither history nor live, whatever its kind; the replay pass decides where it
    marks a replay), and `vendor_end` names the event's path. Only updates whose text holds an
    event's last path segment are parsed."""
    needles = sorted({e.needle for e in events})
    candidates = df.filter(
        (pl.col("method") == "session/update")
        & (pl.col("src") == "agent")
        & pl.col("msg").str.contains_any(needles)
    )
    found: dict[int, str] = {}
    for row, msg in candidates.select("row", "msg").rows():
        try:
            event = first_match(events, loads(msg))
        except ValueError:
            continue
        if event is not None:
            found[row] = event.path
    paths = pl.DataFrame(
        {"row": list(found), "vendor_end": list(found.values())},
        schema={"row": pl.UInt32, "vendor_end": pl.String},
    )
    df = (
        _attach(df, "row", paths)
        if found
        else df.with_columns(pl.lit(None, dtype=pl.String).alias("vendor_end"))
    )
    return df.with_columns(
        pl.when(pl.col("vendor_end").is_not_null())
        .then(pl.lit("vendor"))
        .otherwise(pl.col("update_class"))
        .alias("update_class")
    )


def _pairs(df: pl.DataFrame) -> pl.DataFrame:
    """Pair responses with requests of the other direction by id, per trace, in order.

    Each (trace, requesting side, id) is a queue: a request joins it, a response takes the
    oldest request waiting (none waiting: the response is an orphan). Folded in polars: with
    +1 per request and -1 per response, the queue's length after a row is the running sum
    less its running minimum (when below 0); a response answers when the queue was not empty
    before it, and the k-th response that answers takes the k-th request.
    """
    is_request = pl.col("kind") == "request"
    side = (
        pl.when(is_request)
        .then(pl.col("src"))
        .when(pl.col("src") == "client")
        .then(pl.lit("agent"))
        .otherwise(pl.lit("client"))
    )
    key = ["trace", "side", "id"]
    total = pl.col("total")
    rpc = (
        df.filter(pl.col("kind").is_in(["request", "response", "error"]))
        .select("row", "trace", "src", "kind", "id", "method", "t_ms")
        .with_columns(side.alias("side"))
        .with_columns(pl.when(is_request).then(1).otherwise(-1).cum_sum().over(key).alias("total"))
        .with_columns((total - pl.min_horizontal(total.cum_min().over(key), 0)).alias("queue"))
        .with_columns(pl.col("queue").shift(1).over(key).fill_null(0).alias("waiting"))
        .with_columns((~is_request & (pl.col("waiting") > 0)).alias("answers"))
        .with_columns(
            pl.when(is_request)
            .then(is_request.cum_sum().over(key))
            .when(pl.col("answers"))
            .then(pl.col("answers").cum_sum().over(key))
            .alias("turn")
        )
    )
    requests = rpc.filter(is_request).select(
        *key, "turn", pl.col("row").alias("request"), "method", pl.col("t_ms").alias("sent")
    )
    pairs = (
        rpc.filter("answers")
        .select(*key, "turn", pl.col("row").alias("answer"), "t_ms")
        .join(requests, on=[*key, "turn"], how="inner", nulls_equal=True)
        .select("answer", "request", "method", (pl.col("t_ms") - pl.col("sent")).alias("took"))
    )
    out = rpc.join(
        pairs.select(pl.col("answer").alias("row"), "request", "method", "took"),
        on="row",
        how="left",
        maintain_order="left",
        suffix="_asked",
    ).join(
        pairs.select(pl.col("request").alias("row"), "answer", pl.col("took").alias("waited")),
        on="row",
        how="left",
        maintain_order="left",
    )
    unanswered = ~is_request & ~pl.col("answers")
    orphan = unanswered & ((pl.col("id") != "null") | (pl.col("kind") != "error"))
    return out.select(
        pl.col("row").cast(pl.UInt32),
        pl.coalesce("request", "answer").cast(pl.UInt32).alias("peer_row"),
        pl.col("method_asked").cast(pl.String).alias("request_method"),
        pl.coalesce("took", "waited").cast(pl.Float64).alias("latency_ms"),
        orphan.alias("orphan"),
        (is_request & (pl.col("waiting") > 0)).alias("duplicate_id"),
    )


def connections(records: pl.DataFrame) -> dict[str, Connection]:
    """Per trace, the protocol version, agent and client named by the initialize exchange.

    Falls back to the recorded command for the agent's name. One pass over the table, so a
    directory of thousands of traces costs no more than one trace of the same size.
    """
    kind, src = pl.col("kind"), pl.col("src")
    init = (
        records.filter(kind == "request", src == "client", pl.col("method") == "initialize")
        .group_by("trace", maintain_order=True)
        .first()
        .select("trace", "id", pl.col("msg").alias("request"))
    )
    answers = (
        records.filter(kind == "response", src == "agent")
        .join(init.select("trace", "id"), on=["trace", "id"], how="semi")
        .group_by(["trace", "id"], maintain_order=True)
        .first()
        .select("trace", "id", pl.col("msg").alias("response"))
    )
    heads = (
        records.filter(kind == "header")
        .group_by("trace", maintain_order=True)
        .first()
        .select("trace", pl.col("text").alias("header"))
    )
    table = (
        records.select("trace")
        .unique(maintain_order=True)
        .join(init, on="trace", how="left", maintain_order="left")
        .join(answers, on=["trace", "id"], how="left", maintain_order="left")
        .join(heads, on="trace", how="left", maintain_order="left")
    )
    cols = ("trace", "request", "response", "header")
    return {row[0]: _connection(*row) for row in table.select(cols).iter_rows()}


def _connection(
    trace: str, request: str | None, response: str | None, header: str | None
) -> Connection:
    params = as_dict(loads(request).get("params")) if request else {}
    client_info = as_dict(params.get("clientInfo") or params.get("info"))
    result = as_dict(loads(response).get("result")) if response else {}
    version = result.get("protocolVersion")
    info = as_dict(result.get("info") or result.get("agentInfo"))
    command = as_dict(loads(header)).get("command") if header else None
    return Connection(
        trace=trace,
        protocol=as_int(version),
        agent=agent_name(result, command),
        agent_version=as_str(info.get("version")),
        client=as_str(client_info.get("name")),
    )


def untimed_traces(tl: pl.DataFrame) -> list[str]:
    """Traces whose messages carry no timestamps (ordering-only imports)."""
    messages = tl.filter(pl.col("kind").is_in(["request", "response", "error", "notification"]))
    timed = messages.group_by("trace", maintain_order=True).agg(
        pl.col("t_ns").is_not_null().any().alias("timed")
    )
    return timed.filter(~pl.col("timed"))["trace"].to_list()
