"""Credentials in free text, replaced in the records table that `export`, `report` and the
dataset write (docs/outputs.md), by the recorder's own functions (free_text.py): the same
detection and the same replacement as the tap's, for traces recorded before it existed
(policies before `acp-secrets/4`: phrases on stderr; before `/3`: every credential), with
`--no-redact-content`, or imported.

`scrub_records` rewrites the records' `msg` and `text` cells that hold a credential; every
other cell, and every row without one, stays as it was. A message is parsed, its strings
redacted and written back compactly (as the tap writes a JSON value it redacted); a line of
text is redacted as the tap redacts a line of stderr (a credential's span replaced, a line
whose `\\u00XX` escapes spell one replaced whole); a private key printed over several text
lines is replaced line by line up to its END line. The prefilter is vectorized (polars, the
rules' keywords), so a clean trace costs one scan.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson
import polars as pl

from acp_trace import credentials
from acp_trace.credentials import LineState
from acp_trace.credentials.values import redact_value
from acp_trace.redaction.free_text import redact_text
from acp_trace.redaction.strict_json import dumps

_JSON_KINDS = frozenset({"header", "event"})  # their `text` is a JSON object


def scrub_records(records: pl.DataFrame) -> pl.DataFrame:
    """`records` with credentials in `msg` and `text` replaced (the same frame when none);
    stderr's text also loses the values of `NAME value` phrases, as in the tap."""
    out = records
    keywords = credentials.keywords()  # every phrase's NAME holds one too
    kinds = records["kind"] if "kind" in records.columns else None
    srcs = records["src"] if "src" in records.columns else None
    for column in ("msg", "text"):
        if column not in records.columns or records[column].dtype != pl.String:
            continue
        cells = pl.col(column)
        maybe = (
            cells.str.contains_any(keywords, ascii_case_insensitive=True)
            | cells.str.contains("\\u", literal=True)
            | cells.str.contains("\\/", literal=True)
        )
        if kinds is not None and column == "text":
            maybe = maybe | (pl.col("kind") == "b64")
        rows = records.select(pl.arg_where(maybe.fill_null(False))).to_series()
        if not len(rows):
            continue
        values = records[column].gather(rows).to_list()
        row_kinds = kinds.gather(rows).to_list() if kinds is not None else [None] * len(rows)
        stderr = srcs.gather(rows).to_list() if srcs is not None else [None] * len(rows)
        new = [
            _cell(v, column, k, phrases=src == "stderr")
            for v, k, src in zip(values, row_kinds, stderr, strict=True)
        ]
        if new != values:
            out = out.with_columns(out[column].scatter(rows, pl.Series(new, dtype=pl.String)))
    if kinds is not None and "text" in records.columns:
        out = _key_blocks(records, out)
    return out


def _cell(value: str | None, column: str, kind: str | None, *, phrases: bool) -> str | None:
    if value is None:
        return None
    if column == "msg" or kind in _JSON_KINDS:
        return scrub_json(value)
    if kind == "b64":
        try:
            data = base64.b64decode(value, validate=True)
        except ValueError:
            return value
        new, found = redact_text(data, LineState(), phrases=phrases)
        return base64.b64encode(new).decode() if found else value
    return _text(value, phrases=phrases)


def _text(value: str, *, phrases: bool = False) -> str:
    """A line of text redacted as the tap redacts one (free_text.redact_text; `phrases`:
    a line of stderr)."""
    data = value.encode("utf-8", "surrogatepass")
    new, found = redact_text(data, LineState(), phrases=phrases)
    return new.decode("utf-8", "surrogatepass") if found else value


def scrub_json(text: str) -> str:
    """A JSON text with credentials in its strings replaced (compact when it changed); text
    that is not JSON has the spans replaced as text."""
    try:
        value: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return _text(text)
    if isinstance(value, str):
        new, found = credentials.redact_str(value)
        return _dumps(new) if found else text
    try:
        changed = redact_value(value)
    except ValueError:  # a key that holds a credential: the text, span by span
        return _text(text)
    return _dumps(value) if changed else text


def _dumps(value: Any) -> str:
    """Compact JSON as the tap writes a value it redacted (strict_json.dumps)."""
    return dumps(value).decode()


def _key_blocks(records: pl.DataFrame, out: pl.DataFrame) -> pl.DataFrame:
    """`out` with the text lines of `records` inside a private key block (after a BEGIN line
    with no END on it) replaced, per trace and stream, up to the END line."""
    text = pl.col("text")
    if not records.select(
        ((pl.col("kind") == "text") & text.str.contains("(?i)-----BEGIN[ A-Z0-9_-]*PRIVATE KEY"))
        .fill_null(False)
        .any()
    ).item():
        return out
    rows = records.select(pl.arg_where((pl.col("kind") == "text").fill_null(False))).to_series()
    states: dict[tuple[Any, Any], LineState] = {}
    keys = records.select("trace", "src").rows() if "trace" in records.columns else None
    values = records["text"].gather(rows).to_list()
    new: list[str | None] = []
    for row, value in zip(rows.to_list(), values, strict=True):
        state = states.setdefault(keys[row] if keys else ("", ""), LineState())
        if value is None:
            new.append(value)
            continue
        data, _found = state.redact(value.encode("utf-8", "surrogatepass"))
        new.append(data.decode("utf-8", "surrogatepass"))
    return out.with_columns(out["text"].scatter(rows, pl.Series(new, dtype=pl.String)))
