"""The schema pass: every message of both directions against the ACP JSON Schema of the protocol
version negotiated on its connection (catalog.py says which type), each distinct shape once.

The version is the connection's (`protocol`, from the initialize response); `initialize` itself
is checked against the version it names (the request's `params.protocolVersion`, the response's
`result.protocolVersion`). Without a negotiated version 1 or 2 a message is checked against
both: valid under either is valid, and one that breaks both is reported by v2 (v1 when only v1
knows the method) as a warning, since the version is not known. Unknown `sessionUpdate` variants
are not judged (the union is open), nor are methods the schema does not name; `replay_complete`
(newer than the vendored schema) is valid with nothing but an optional `_meta` object.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import polars as pl

from acp_trace.analysis.schema.catalog import PARTS, VERSIONS, schema
from acp_trace.analysis.schema.explain import Problem, problems
from acp_trace.analysis.schema.shapes import shape_expr
from acp_trace.jsonrpc import MARKER_KIND, loads

MESSAGE_KINDS = tuple(PARTS)
SIDES = ("client", "agent")
ABSENT = object()
MAX_PROBLEMS = 5  # per message: the first few say enough


@dataclass(frozen=True)
class SchemaIssue:
    """One problem of one kind of message in one trace, with every message that has it."""

    trace: str
    rows: tuple[int, ...]  # the timeline rows of those messages, in order
    side: str  # who sent them
    kind: str  # request, notification, response or error
    method: str  # the method (a response: its request's); "" for an error response
    version: int | None  # the schema's protocol version; None: none was negotiated
    type_name: str
    part: str  # params, result or error
    absent: bool  # the part was missing from the message
    problem: Problem

    @property
    def row(self) -> int:
        return self.rows[0]

    @property
    def severity(self) -> str:
        """`error` for a hard requirement; `warning` where receivers are told to be lenient,
        or when the connection negotiated no version."""
        return "warning" if self.problem.lenient or self.version is None else "error"


@dataclass
class SchemaFacts:
    """What the schema pass found."""

    issues: list[SchemaIssue] = field(default_factory=list)
    hard: dict[int, SchemaIssue] = field(default_factory=dict)  # row -> its first error issue
    checked: int = 0  # messages validated
    shapes: int = 0  # distinct shapes among them
    unchecked: list[int] = field(default_factory=list)  # rows the validator could not take


def validate_timeline(tl: pl.DataFrame) -> SchemaFacts:
    """Validate every message of a timeline that the schema has a type for."""
    facts = SchemaFacts()
    groups = _shape_groups(tl)
    facts.shapes = groups.height
    found: dict[tuple[Any, ...], SchemaIssue] = {}
    members: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    msgs = tl["msg"]
    for version, kind, src, method, shape, rows, traces in groups.iter_rows():
        facts.checked += len(rows)
        for msg, mine_rows, mine_traces in _units(shape, rows, traces, msgs):
            verdict = _check(version, kind, src, method, msg)
            if verdict is None:
                continue
            by_trace: dict[str, list[int]] = defaultdict(list)
            for trace, row in zip(mine_traces, mine_rows, strict=True):
                by_trace[trace].append(row)
            for trace, mine in by_trace.items():
                # explained by its own first message: the values a message quotes are its own
                for issue in _explain(verdict, trace, msgs[mine[0]], mine[0], facts):
                    key = (trace, *_issue_key(issue))
                    found.setdefault(key, issue)
                    members[key].update(mine)
    for key, issue in found.items():
        rows = tuple(sorted(members[key]))
        facts.issues.append(replace(issue, rows=rows))
    facts.issues.sort(key=lambda i: i.row)
    for issue in facts.issues:
        if issue.severity == "error":
            for row in issue.rows:
                facts.hard.setdefault(row, issue)
    return facts


def _known() -> pl.DataFrame:
    """(kind, src, method) of every message some vendored schema has a type for."""
    keys = {
        (kind, src, method)
        for v in VERSIONS
        for (method, _side, kind) in schema(v).types
        for src in SIDES
        if schema(v).type_for(kind, src, method)
    }
    keys |= {("error", src, "") for src in SIDES}
    return pl.DataFrame(sorted(keys), schema=["kind", "src", "key"], orient="row")


def _shape_groups(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per (version, kind, sender, method, shape): the rows and traces that have it."""
    kind = pl.col("kind")
    key = (
        pl.when(kind == "response")
        .then(pl.col("request_method"))
        .when(kind == "error")
        .then(pl.lit(""))
        .otherwise(pl.col("method"))
    )
    version = pl.when(pl.col("protocol").is_in(VERSIONS)).then(pl.col("protocol")).otherwise(0)
    return (
        tl.lazy()
        .filter(kind.is_in(MESSAGE_KINDS) & pl.col("src").is_in(SIDES))
        .select("row", "trace", "src", "kind", key.alias("key"), version.alias("version"), "msg")
        .join(_known().lazy(), on=["kind", "src", "key"], how="semi", maintain_order="left")
        .select("row", "trace", "version", "kind", "src", "key", shape_expr().alias("shape"))
        .group_by(["version", "kind", "src", "key", "shape"], maintain_order=True)
        .agg(pl.col("row"), pl.col("trace"))
        .select("version", "kind", "src", "key", "shape", "row", "trace")
        .collect()
    )


@dataclass(frozen=True)
class _Verdict:
    version: int
    known: bool  # the version was negotiated (or named by initialize)
    kind: str
    src: str
    method: str
    type_name: str


def _units(
    shape: str, rows: list[int], traces: list[str], msgs: pl.Series
) -> Iterator[tuple[Any, list[int], list[str]]]:
    """What to validate for one shape: the shape itself for all its messages, or, when it is
    not JSON (a string made of a colon stood where a key ends: shapes.py), each message."""
    try:
        yield loads(shape), rows, traces
    except ValueError:
        for row, trace in zip(rows, traces, strict=True):
            try:
                yield loads(msgs[row]), [row], [trace]
            except ValueError:  # never: the reader parsed every message
                continue


def _check(version: int, kind: str, src: str, method: str, msg: Any) -> _Verdict | None:
    """None when a message (or a shape) is valid, or has no type; else where it breaks."""
    if method == "initialize" and kind in ("request", "response"):
        named = _part(msg, kind)
        named = named.get("protocolVersion") if isinstance(named, dict) else None
        version = named if named in VERSIONS else 0
    tried: list[_Verdict] = []
    for v in (version,) if version else (2, 1):
        type_name = schema(v).type_for(kind, src, method)
        if type_name is None:
            continue
        errors, extra = _judge(v, type_name, method, _part(msg, kind))
        if not errors and not extra:
            return None
        tried.append(_Verdict(v, version != 0, kind, src, method, type_name))
    return tried[0] if tried else None


def _part(msg: Any, kind: str) -> Any:
    """The value a message's type describes; an absent params counts as `{}`, an absent result
    as null."""
    part = msg.get(PARTS[kind], ABSENT) if isinstance(msg, dict) else ABSENT
    if part is ABSENT:
        return {} if PARTS[kind] == "params" else None
    return part


def _judge(
    version: int, type_name: str, method: str, value: Any
) -> tuple[list[Any], list[Problem]]:
    """The validator's errors for one value, without those the rules do not judge (an unknown
    `sessionUpdate` variant), and the problems of a `replay_complete` the schema predates."""
    validator = schema(version).validator(type_name)
    errors = [] if validator.is_valid(value) else list(validator.iter_errors(value))
    extra: list[Problem] = []
    update = value.get("update") if method == "session/update" and isinstance(value, dict) else None
    if not isinstance(update, dict):
        return errors, extra
    tag = update.get("sessionUpdate")
    if isinstance(tag, str) and tag not in schema(version).update_variants:
        errors = [e for e in errors if list(e.instance_path)[:1] != ["update"]]
        if tag == MARKER_KIND:
            extra = _marker_problems(update)
    return errors, extra


def _explain(
    verdict: _Verdict, trace: str, text: str, row: int, facts: SchemaFacts
) -> Iterator[SchemaIssue]:
    """The problems of one message of an invalid shape, from its real text."""
    try:
        msg = loads(text)
        value = _part(msg, verdict.kind)
        errors, extra = _judge(verdict.version, verdict.type_name, verdict.method, value)
    except ValueError:  # a value the validator cannot take (a lone surrogate in a key)
        facts.unchecked.append(row)
        return
    absent = not isinstance(msg, dict) or PARTS[verdict.kind] not in msg
    found = problems(schema(verdict.version).doc, verdict.type_name, errors) + extra
    for problem in found[:MAX_PROBLEMS]:
        yield SchemaIssue(
            trace=trace,
            rows=(row,),
            side=verdict.src,
            kind=verdict.kind,
            method=verdict.method,
            version=verdict.version if verdict.known else None,
            type_name=verdict.type_name,
            part=PARTS[verdict.kind],
            absent=absent,
            problem=problem,
        )


def _marker_problems(update: dict[str, Any]) -> list[Problem]:
    """`replay_complete`, which the vendored schema predates: an optional `_meta` object only."""
    meta = update.get("_meta")
    if meta is None or isinstance(meta, dict):
        return []
    got = "an array" if isinstance(meta, list) else orjson.dumps(type(meta).__name__).decode()
    return [
        Problem(
            path=("update", "_meta"),
            keyword="type",
            text=f"expected object or null, got {got}",
            says="The _meta property is reserved by ACP to allow clients and agents to attach "
            "additional metadata to their interactions.",
            lenient="x-deserialize-default-on-error",
        )
    ]


def _issue_key(issue: SchemaIssue) -> tuple[Any, ...]:
    """Problems that are the same for a reader: same message kind, type, place and keyword."""
    pattern = tuple("*" if isinstance(step, int) else step for step in issue.problem.path)
    return (
        issue.side,
        issue.kind,
        issue.method,
        issue.version,
        issue.type_name,
        pattern,
        issue.problem.keyword,
        issue.problem.lenient,
        issue.problem.text if issue.problem.keyword == "required" else "",
    )
