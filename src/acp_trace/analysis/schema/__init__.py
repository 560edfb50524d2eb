"""Validation of every message against the official ACP JSON Schemas, with blame.

The schemas of npm `@agentclientprotocol/sdk` (v1 and v2, stable and unstable; Apache-2.0) are
vendored in `data/` (`source.json` names the version; `scripts/vendor_schemas.py` refreshes
them). `validate_timeline(tl)` checks each message of both directions against the type of its
method and direction in the version negotiated on its connection, each distinct message shape
once, and returns `SchemaFacts` for the rules `schema-invalid` and `caused-error`.
"""

from __future__ import annotations

from acp_trace.analysis.schema.catalog import schema, source
from acp_trace.analysis.schema.explain import Problem, path_text
from acp_trace.analysis.schema.validate import SchemaFacts, SchemaIssue, validate_timeline

__all__ = [
    "Problem",
    "SchemaFacts",
    "SchemaIssue",
    "path_text",
    "schema",
    "source",
    "validate_timeline",
]
