"""Conformance checks: a registry of small functions, one per rule of rules.md.

Every check has the same signature, `(ctx: Context) -> Iterator[Finding]`, and reads the facts
that the timeline, the replay pass and the turn pass already found. Messages say what was
expected, what came instead, and where (trace, session, seq). The rules live in three modules:
`replay_rules` (markers, resumes, loads), `wire_rules` (JSON-RPC on stdio, imports),
`schema_rules` (the ACP JSON Schema) and `profile_rules` (claude-agent-acp's signals); importing
them registers them in catalogue order. Every finding says who broke the rule (`side`).
`guesses` adds `import-unknown-error-code` and downgrades findings that rest on an importer's
guess (registered in `registry.ADJUSTERS`, run by `run_checks` before the severity filter).
"""

from __future__ import annotations

# Importing the rule modules registers their rules; the order is the catalogue's.
# isort: off
from acp_trace.analysis.checks import replay_rules, wire_rules, schema_rules, profile_rules, guesses
from acp_trace.analysis.checks.registry import (
    FINDING_SCHEMA,
    RULES,
    SEVERITIES,
    SIDES,
    Context,
    Finding,
    Rule,
    rule,
    run_checks,
)

# isort: on

__all__ = [
    "FINDING_SCHEMA",
    "RULES",
    "SEVERITIES",
    "SIDES",
    "Context",
    "Finding",
    "Rule",
    "guesses",
    "profile_rules",
    "replay_rules",
    "rule",
    "run_checks",
    "schema_rules",
    "wire_rules",
]
