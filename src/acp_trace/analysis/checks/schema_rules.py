"""Rules about the ACP JSON Schema: messages that break it, and errors they caused (rules.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from acp_trace.analysis.checks.registry import Context, Finding, rule
from acp_trace.analysis.schema import SchemaIssue, path_text
from acp_trace.jsonrpc import INVALID_PARAMS
from acp_trace.quantities import count

INVALID_REQUEST = -32600
CAUSED_CODES = (INVALID_PARAMS, INVALID_REQUEST)


@rule(
    "schema-invalid",
    "error",
    "a message does not match the ACP JSON Schema of its method and direction",
    side="both",
)
def schema_invalid(ctx: Context) -> Iterator[Finding]:
    if ctx.schema is None:
        return
    for issue in ctx.schema.issues:
        problem = issue.problem
        where = path_text(issue.part, problem.path) + (" (absent)" if issue.absent else "")
        text = (
            f"{_what(ctx, issue.row, issue)} sent by the {issue.side} at {ctx.seq(issue.row)} "
            f"does not match {issue.type_name} of {_schema(issue)} at {where}: {problem.text}"
        )
        if problem.says:
            text += f'; the schema says: "{problem.says}"'
        if problem.unknown:
            text += f"; it has {_names(problem.unknown)}, which {issue.type_name} does not define"
        if problem.lenient:
            text += f"; receivers are told to tolerate this ({problem.lenient}), so: warning"
        elif issue.version is None:
            text += (
                "; the connection negotiated no protocol version 1 or 2 (no initialize), so it was "
                "checked against v1 and v2 and breaks both: warning"
            )
        yield ctx.at(
            "schema-invalid",
            issue.row,
            ctx.timeline["session"][issue.row],
            text + _more(ctx, issue.rows),
            severity=issue.severity,
            side=issue.side,
        )


@rule(
    "caused-error",
    "info",
    "an error response (-32602, -32600) answers a request that broke the schema",
    side="both",
)
def caused_error(ctx: Context) -> Iterator[Finding]:
    if ctx.schema is None or not ctx.schema.hard:
        return
    tl = ctx.timeline
    errors = tl.filter(
        (pl.col("kind") == "error")
        & pl.col("error_code").is_in(CAUSED_CODES)
        & pl.col("peer_row").is_not_null()
    ).select("row", "peer_row", "error_code")
    caused: dict[tuple[Any, ...], list[tuple[int, int, int]]] = {}
    for row, request, code in errors.iter_rows():
        issue = ctx.schema.hard.get(request)
        if issue is not None:
            caused.setdefault((issue.trace, id(issue), code), []).append((row, request, code))
    for (_trace, _issue, code), answers in caused.items():
        row, request, _ = answers[0]
        issue = ctx.schema.hard[request]
        yield ctx.at(
            "caused-error",
            row,
            tl["session"][row],
            f"error {code} at {ctx.seq(row)} answers {_what(ctx, request, issue)}, sent by the "
            f"{issue.side} at {ctx.seq(request)}, which breaks {issue.type_name} of "
            f"{_schema(issue)}: {_cause(issue)}; the error is the {issue.side}'s doing"
            + _more(ctx, [r for r, _, _ in answers]),
            side=issue.side,
        )


def _what(ctx: Context, row: int, issue: SchemaIssue) -> str:
    mid = ctx.timeline["id"][row]
    if issue.kind == "request":
        return f"the {issue.method} request (id {mid})"
    if issue.kind == "notification":
        return f"the {issue.method} notification"
    if issue.kind == "response":
        return f"the response to {issue.method} (id {mid})"
    return f"the error response (id {mid})"


def _schema(issue: SchemaIssue) -> str:
    return "the ACP schema" if issue.version is None else f"the ACP v{issue.version} schema"


def _cause(issue: SchemaIssue) -> str:
    """`the client sent `content`, the schema requires `prompt``, or where and what broke."""
    problem = issue.problem
    where = path_text(issue.part, problem.path)
    if problem.missing and problem.unknown:
        return (
            f"the {issue.side} sent {_names(problem.unknown)}, the schema requires "
            f"`{problem.missing}` (at {where})"
        )
    if problem.missing:
        return f"the schema requires `{problem.missing}` at {where}, the {issue.side} sent none"
    return f"at {where} {problem.text}"


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _more(ctx: Context, rows: tuple[int, ...] | list[int]) -> str:
    """` (and 14 more like it: seq 20, 31, ...)` for repeated findings."""
    if len(rows) < 2:
        return ""
    seqs = ", ".join(str(ctx.timeline["seq"][r]) for r in rows[1:6])
    tail = ", ..." if len(rows) > 6 else ""
    return f" (and {count(len(rows) - 1)} more like it: seq {seqs}{tail})"
