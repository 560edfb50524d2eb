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

import polars as pl

from acp_trace.analysis.schema.catalog import PARTS, VERSIONS, schema
from acp_trace.analysis.schema.explain import Problem, json_type, problems
from acp_trace.analysis.schema.shapes import shape_expr
from acp_trace.jsonrpc import MARKER_KIND, clean_value, loads

MESSAGE_KINDS = tuple(PARTS)
SIDES = ("client", "agent")
ABSENT = object()
MAX_PROBLEMS = 5  # per message: the first few say enough
UNFOLDED = "unfolded"


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
    failing = _failing(tl, facts)
    found: dict[tuple[Any, ...], SchemaIssue] = {}
    members: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    msgs, traces = tl["msg"], tl["trace"]
    for verdict, rows in failing:
        by_trace: dict[str, list[int]] = defaultdict(list)
        for row in rows:
            by_trace[traces[row]].append(row)
        for trace, mine in by_trace.items():
            # explained by its own first message: the values a message quotes are its own
            for issue in _explain(verdict, trace, msgs[mine[0]], mine[0], facts):
                key = (trace, *_issue_key(issue))
                found.setdefault(key, issue)
                members[key].update(mine)
    for key, issue in found.items():
        facts.issues.append(replace(issue, rows=tuple(sorted(members[key]))))
    facts.issues.sort(key=lambda i: i.row)
    for issue in facts.issues:
        if issue.severity == "error":
            for row in issue.rows:
                facts.hard.setdefault(row, issue)
    return facts


CHUNK_ROWS = 20_000  # timeline rows shaped at a time: only one chunk's shapes are in memory
_HEAD = ["version", "kind", "src", "key", "h1", "h2", "n"]  # a shape: its message kind, hashes


def _failing(tl: pl.DataFrame, facts: SchemaFacts) -> list[tuple[_Verdict, list[int]]]:
    """Every way messages break the schema, with their rows: each distinct shape (known by its
    message kind and two 64-bit hashes and the length of its text) is validated once, and
    rows are kept only for the shapes that fail. A chunk at a time, so memory stays small."""
    verdicts: dict[tuple[Any, ...], _Verdict | str | None] = {}
    rows_of: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for chunk in _chunks(tl):
        heads = chunk.group_by(_HEAD, maintain_order=True).agg(
            pl.col("shape").first(), pl.len().alias("count")
        )
        bad = []
        for *head, shape, count in heads.iter_rows():
            facts.checked += count
            key = tuple(head)
            if key not in verdicts:
                verdicts[key] = _verdict_of(head, shape)
            if verdicts[key] is not None:
                bad.append(key)
        for *head, rows in (
            chunk.join(pl.DataFrame(bad, schema=chunk.select(_HEAD).schema, orient="row"), on=_HEAD)
            .group_by(_HEAD, maintain_order=True)
            .agg(pl.col("row"))
            .iter_rows()
            if bad
            else ()
        ):
            rows_of[tuple(head)].extend(rows)
    facts.shapes = len(verdicts)
    out: list[tuple[_Verdict, list[int]]] = []
    msgs = tl["msg"]
    for key, rows in rows_of.items():
        verdict = verdicts[key]
        if isinstance(verdict, _Verdict):
            out.append((verdict, rows))
            continue
        for row in rows:  # a shape that is not JSON: each message on its own (shapes.py)
            msg = _loads_or_none(msgs[row])
            version, kind, src, method = key[:4]
            single = None if msg is None else _check(version, kind, src, method, msg)
            if single is not None:
                out.append((single, [row]))
    return out


def _verdict_of(head: list[Any], shape: str) -> _Verdict | str | None:
    """A shape's verdict: None (valid, or no type), where it breaks, or UNFOLDED when the
    shape is not JSON and its messages must be validated one by one."""
    try:
        msg = loads(shape)
    except ValueError:
        return UNFOLDED
    return _check(head[0], head[1], head[2], head[3], msg)


def _loads_or_none(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:  # never: the reader parsed every message
        return None


def _chunks(tl: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """The messages the schema has a type for, a slice of the timeline at a time, with their
    shape (slices share the timeline's data: only the shapes are new)."""
    kind = pl.col("kind")
    key = (
        pl.when(kind == "response")
        .then(pl.col("request_method"))
        .when(kind == "error")
        .then(pl.lit(""))
        .otherwise(pl.col("method"))
    )
    version = pl.when(pl.col("protocol").is_in(VERSIONS)).then(pl.col("protocol")).otherwise(0)
    shape = pl.col("shape")
    known = _known().lazy()
    for start in range(0, tl.height, CHUNK_ROWS):
        yield (
            tl.slice(start, CHUNK_ROWS)
            .lazy()
            .filter(kind.is_in(MESSAGE_KINDS) & pl.col("src").is_in(SIDES))
            .select("row", "src", "kind", key.alias("key"), version.alias("version"), "msg")
            .join(known, on=["kind", "src", "key"], how="semi", maintain_order="left")
            .select("row", "version", "kind", "src", "key", shape_expr().alias("shape"))
            .with_columns(
                shape.hash(seed=1).alias("h1"),
                shape.hash(seed=2).alias("h2"),
                shape.str.len_bytes().alias("n"),
            )
            .collect()
        )


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


@dataclass(frozen=True)
class _Verdict:
    version: int
    known: bool  # the version was negotiated (or named by initialize)
    kind: str
    src: str
    method: str
    type_name: str


def _check(version: int, kind: str, src: str, method: str, msg: Any) -> _Verdict | None:
    """None when a message (or a shape) is valid, or has no type; else where it breaks."""
    if method == "initialize" and kind in ("request", "response"):
        named = _part(msg, kind)
        named = named.get("protocolVersion") if isinstance(named, dict) else None
        version = named if type(named) is int and named in VERSIONS else 0  # not True, 2.0
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
    try:
        errors = [] if validator.is_valid(value) else list(validator.iter_errors(value))
    except UnicodeEncodeError:  # a lone surrogate, which jsonschema-rs cannot take: escaped
        value = clean_value(value)
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
    return [
        Problem(
            path=("update", "_meta"),
            keyword="type",
            text=f"expected object or null, got {json_type(meta)}",
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
