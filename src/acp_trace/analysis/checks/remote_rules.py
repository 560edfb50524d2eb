"""Rules only a remote transport can break (rules.md, "Remote transports"), on the traces of
`acp-trace record --listen` (analysis/remote.py reads where each message travelled):

- `remote-wrong-stream`: a message for session S on the session stream of another session
  (protocol-notes, Remote ACP: session-scoped streams carry their session's output).
- `remote-client-error`: a 400 (missing or mismatched `Acp-Session-Id`), 409 (a second reader
  of one stream) or 426 (plain HTTP on the WebSocket endpoint) the client provoked, or a
  WebSocket the agent closed with 1002 (the first message not initialize) or 1008 (a limit).
- `remote-stream-closed-owing`: a session stream, the connection stream or a WebSocket that
  the agent's side ended while a request it would answer there was pending.
- `remote-reconnect-lost`: a stream the client opened again after it ended owing messages (or
  inside an event) whose owed answers never came.
- `remote-order-by-stamps`: a replay whose updates and response came on more than one stream:
  their order, and so the gap, is only the proxy's stamps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.analysis.remote import Exchange, RemoteTrace, remote_traces, stream_label
from acp_trace.quantities import count

CLIENT_CLOSES = {
    1002: "a protocol error (the TypeScript server's answer to a first message other than initialize)",
    1008: "a policy violation (a message over the agent's size limit)",
}
CLIENT_STATUSES = {
    400: "a request without the Acp-Session-Id it needs, or with one that does not match",
    409: "a second reader of a stream that has one",
    426: "plain HTTP on the WebSocket endpoint",
}
OWED_CHANNELS = ("session", "connection", "ws")


def _remote(ctx: Context) -> dict[str, RemoteTrace]:
    return remote_traces(ctx.timeline, ctx.headers)


@rule("remote-wrong-stream", "error", "a message for one session came on another session's stream")
def wrong_stream(ctx: Context) -> Iterator[Finding]:
    for trace, remote in _remote(ctx).items():
        rows = ctx.timeline.filter(
            (pl.col("trace") == trace)
            & (pl.col("src") == "agent")
            & pl.col("session").is_not_null()
        )
        for row, seq, session, kind, method in rows.select(
            "row", "seq", "session", "kind", "method"
        ).rows():
            where = remote.of(seq)
            if where.get("channel") == "session" and where.get("acp_session") not in (
                None,
                session,
            ):
                what = method or kind
                yield ctx.at(
                    "remote-wrong-stream",
                    row,
                    session,
                    f"{what} for session {session} came on {remote.label(seq)}; a session stream "
                    "carries only its own session's messages",
                )


@rule(
    "remote-client-error",
    "error",
    "the client provoked a 400, 409 or 426, or a WebSocket close 1002 or 1008, from the agent",
    side="client",
)
def client_error(ctx: Context) -> Iterator[Finding]:
    for _trace, remote in _remote(ctx).items():
        for ex in remote.exchanges.values():
            label = stream_label(ex.channel, ex.acp_session, ex.number)
            if ex.status in CLIENT_STATUSES and ex.status_row is not None:
                body = ex.end.get("body")
                said = f" ({body.strip()[:120]})" if isinstance(body, str) and body.strip() else ""
                yield ctx.at(
                    "remote-client-error",
                    ex.status_row,
                    ex.acp_session,
                    f"{ex.method} for {label} was answered {ex.status}{said}: "
                    f"{CLIENT_STATUSES[ex.status]}",
                )
            code = ex.end.get("code")
            if ex.transport == "ws" and ex.end.get("by") == "agent" and code in CLIENT_CLOSES:
                assert ex.end_row is not None
                reason = ex.end.get("reason")
                said = f" ({reason})" if isinstance(reason, str) and reason else ""
                yield ctx.at(
                    "remote-client-error",
                    ex.end_row,
                    ex.acp_session,
                    f"the agent closed {label} with {code}{said}: {CLIENT_CLOSES[code]}",
                )


@rule(
    "remote-stream-closed-owing",
    "error",
    "the agent's side ended a stream while a request it would answer there was pending",
)
def stream_closed_owing(ctx: Context) -> Iterator[Finding]:
    for trace, remote in _remote(ctx).items():
        for ex in remote.exchanges.values():
            if ex.channel not in OWED_CHANNELS or ex.end.get("by") != "agent" or ex.end_row is None:
                continue
            owed = _owed(ctx, trace, ex)
            if owed.is_empty():
                continue
            how = "cut" if ex.end.get("cut") or ex.end.get("code") == 1006 else "closed"
            first_seq, method, session = owed.select("seq", "method", "session").row(0)
            yield ctx.at(
                "remote-stream-closed-owing",
                ex.end_row,
                ex.acp_session or session,
                f"{stream_label(ex.channel, ex.acp_session, ex.number)} was {how} by the agent's "
                f"side with {count(owed.height)} request(s) still owed there (the first: {method} "
                f"at seq {first_seq}); a stream must stay open until what it owes is sent",
            )


@rule(
    "remote-reconnect-lost", "warning", "a stream opened again lost what its last reader was owed"
)
def reconnect_lost(ctx: Context) -> Iterator[Finding]:
    for trace, remote in _remote(ctx).items():
        for row, detail in remote.reconnects:
            previous = remote.exchanges.get(detail.get("previous"))  # type: ignore[arg-type]
            if previous is None or previous.end_row is None or previous.end_row > row:
                continue
            owed = _owed(ctx, trace, previous)
            lost = owed.filter(pl.col("peer_row").is_null())
            cut = previous.end.get("cut_bytes")
            if lost.is_empty() and not cut:
                continue
            parts = []
            if not lost.is_empty():
                parts.append(f"{count(lost.height)} request(s) owed there never got an answer")
            if cut:
                parts.append(f"an event was cut after {count(cut)} bytes")
            yield ctx.at(
                "remote-reconnect-lost",
                row,
                previous.acp_session,
                f"the client opened {stream_label(previous.channel, previous.acp_session, previous.number)} "
                f"again (exchange {detail.get('exchange')}) after it ended: " + "; ".join(parts),
            )


@rule(
    "remote-order-by-stamps",
    "info",
    "a replay's updates and response came on more than one stream: their order is the proxy's stamps",
    side="both",
)
def order_by_stamps(ctx: Context) -> Iterator[Finding]:
    remote = _remote(ctx)
    for w in ctx.facts.windows:
        if w.trace not in remote or not w.replaying or w.end_row is None:
            continue
        seqs = ctx.timeline.filter(
            (pl.col("trace") == w.trace)
            & (pl.col("src") == "agent")
            & pl.col("row").is_between(w.req_row, w.end_row)
            & pl.col("session").is_in(list(w.sessions))
        )["seq"].to_list()
        streams = {_stream(remote[w.trace].of(seq)) for seq in seqs} - {None}
        if len(streams) < 2:
            continue
        names = ", ".join(sorted(stream_label(*s) for s in streams))  # type: ignore[misc]
        yield ctx.at(
            "remote-order-by-stamps",
            w.req_row,
            w.session,
            f"{ctx.describe(w)}: its updates and response came on {count(len(streams))} streams "
            f"({names}); their order across streams, and so the gap, is the proxy's stamps only",
        )


def _stream(where: dict[str, Any]) -> tuple[str, str | None, int] | None:
    if "exchange" not in where:
        return None
    return (where.get("channel", ""), where.get("acp_session"), where["exchange"])


def _owed(ctx: Context, trace: str, ex: Exchange) -> pl.DataFrame:
    """The client's requests pending when `ex` ended that it would have carried: on a session
    stream its session's, on the connection stream those of no session, on a WebSocket all."""
    tl = ctx.timeline
    pending = tl.filter(
        (pl.col("trace") == trace)
        & (pl.col("src") == "client")
        & (pl.col("kind") == "request")
        & (pl.col("row") < ex.end_row)
        & (pl.col("peer_row").is_null() | (pl.col("peer_row") > ex.end_row))
    )
    if ex.channel == "session":
        pending = pending.filter(pl.col("session") == ex.acp_session)
    elif ex.channel == "connection":
        pending = pending.filter(pl.col("session").is_null())
    return pending.sort("row")
