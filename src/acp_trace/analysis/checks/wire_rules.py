"""Rules about the wire: JSON-RPC hygiene on stdio, and what importers could not infer."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.jsonrpc import CANCEL_METHOD, cancelled_key, other_side
from acp_trace.trace.format import header_items


@rule(
    "non-json-line",
    "error",
    "a line on the agent's stdout or the client's stdin is not JSON-RPC",
    side="both",
)
def non_json_line(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    bad = tl.filter(
        pl.col("src").is_in(["agent", "client"])
        & pl.col("kind").is_in(["text", "b64", "invalid"])
        & ~pl.col("truncated").fill_null(False)
    ).unique(["trace", "seq"], keep="first", maintain_order=True)
    for row, src, kind, text, msg in bad.select("row", "src", "kind", "text", "msg").iter_rows():
        if kind == "text" and not text.strip():
            continue
        stream = "the agent's stdout" if src == "agent" else "the client's stdin (to the agent)"
        what = {
            "text": "is not JSON",
            "b64": "is not UTF-8 text",
            "invalid": "is JSON but not a JSON-RPC 2.0 message",
        }[kind]
        sample = (text if kind == "text" else msg or text or "")[:80]
        yield ctx.at(
            "non-json-line",
            row,
            tl["session"][row],
            f"a line on {stream} at {ctx.seq(row)} {what}: {sample!r}; expected one "
            "JSON-RPC 2.0 message (or a non-empty array of them) per line",
            side=src,
        )


@rule("unanswered-request", "warning", "a request has no response when the trace ends", side="both")
def unanswered_request(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    pending = tl.filter((pl.col("kind") == "request") & pl.col("peer_row").is_null())
    for row, src, method, mid, session in pending.select(
        "row", "src", "method", "id", "session"
    ).iter_rows():
        yield ctx.at(
            "unanswered-request",
            row,
            session,
            f"{method} (id {mid}) sent by the {src} at {ctx.seq(row)} got no response "
            "before the trace ended",
            side=other_side(src),
        )


@rule(
    "orphan-response",
    "warning",
    "a response answers no pending request of the other side",
    side="both",
)
def orphan_response(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    for row, src, mid, session in (
        tl.filter(pl.col("orphan").fill_null(False))
        .select("row", "src", "id", "session")
        .iter_rows()
    ):
        yield ctx.at(
            "orphan-response",
            row,
            session,
            f"a response with id {mid} from the {src} at {ctx.seq(row)} matches no pending "
            f"request of the {other_side(src)}; expected a reply only to an open request",
            side=src,
        )


@rule(
    "duplicate-request-id",
    "warning",
    "a sender reuses the id of its own pending request",
    side="both",
)
def duplicate_request_id(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    dup = tl.filter((pl.col("kind") == "request") & pl.col("duplicate_id").fill_null(False))
    for row, src, method, mid, session in dup.select(
        "row", "src", "method", "id", "session"
    ).iter_rows():
        yield ctx.at(
            "duplicate-request-id",
            row,
            session,
            f"{method} from the {src} at {ctx.seq(row)} reuses id {mid} while an earlier "
            "request with that id is still pending; ids must be unique per sender",
            side=src,
        )


@rule("cancel-unanswered", "error", "a cancelled request never got a response", side="both")
def cancel_unanswered(ctx: Context) -> Iterator[Finding]:
    tl = ctx.timeline
    requests = tl.filter(pl.col("kind") == "request").select(
        "row", "trace", "src", "id", "method", "peer_row"
    )
    index: dict[tuple[str, str, str], list[tuple[int, str, int | None]]] = {}
    for row, trace, src, mid, method, peer in requests.iter_rows():
        index.setdefault((trace, src, mid), []).append((row, method, peer))
    cancels = tl.filter(pl.col("method") == CANCEL_METHOD).select(
        "row", "trace", "src", "msg", "session"
    )
    for row, trace, src, msg, session in cancels.iter_rows():
        target = cancelled_key(msg)  # exact at any size, as the `id` column holds ids
        if target is None:
            continue
        earlier = [c for c in index.get((trace, src, target), []) if c[0] < row]
        if earlier and earlier[-1][2] is None:
            req_row, method, _ = earlier[-1]
            yield ctx.at(
                "cancel-unanswered",
                row,
                session or tl["session"][req_row],
                f"$/cancel_request at {ctx.seq(row)} cancelled {method} (id {target}, "
                f"{ctx.seq(req_row)}), which never got a response; a cancelled request "
                "must still be answered (-32800 when it stops)",
                side=other_side(src),
            )


@rule(
    "import-ambiguous-direction",
    "info",
    "an imported message's direction had to be guessed",
    side="both",
)
def import_ambiguous_direction(ctx: Context) -> Iterator[Finding]:
    for trace, head in ctx.headers.items():
        for item in header_items(head, "ambiguous"):
            seq = item.get("seq") if isinstance(item.get("seq"), int) else None
            yield Finding(
                rule="import-ambiguous-direction",
                severity="info",
                side="both",
                trace=trace,
                session=None,
                seq=seq,
                t_ms=None,
                message=(
                    f"the direction of the message at seq {seq} (source line {item.get('line')}) "
                    f"could not be inferred from the protocol: {item.get('reason')}; "
                    "ordering rules treat it as the importer guessed"
                ),
            )
