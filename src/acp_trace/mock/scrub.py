"""Credentials in free text, replaced in what the mock serves (docs/mock.md): the same
detection the recorder runs (acp_trace.credentials), for traces recorded before it existed
or with `--no-redact-content`. A message has the credentials in its strings replaced and is
written back compactly; a line of text (stray stdout, stderr) has their spans replaced, a
private key printed over several lines replaced up to its END line."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from acp_trace import credentials
from acp_trace.credentials.values import redact_value

if TYPE_CHECKING:
    from acp_trace.mock.recording import Record


def scrub(records: list[Record]) -> list[Record]:
    """The records with credentials in free text replaced (unchanged records kept)."""
    from acp_trace.mock.recording import dumps

    lines: dict[str, credentials.LineState] = {}
    out = []
    for rec in records:
        if rec.event is not None:
            out.append(rec)
        elif rec.msg is not None:
            escaped = b"\\u" in rec.data or b"\\/" in rec.data
            if (escaped or credentials.may_hold(rec.data)) and _redacted(rec.msg):
                rec = replace(rec, data=dumps(rec.msg))
            out.append(rec)
        else:
            state = lines.setdefault(rec.src, credentials.LineState())
            data, found = state.redact(rec.data)
            out.append(replace(rec, data=data) if found else rec)
    return out


def _redacted(msg: object) -> bool:
    try:
        return bool(redact_value(msg))
    except ValueError:  # a key that held a credential equals another: serve no such key
        return True
