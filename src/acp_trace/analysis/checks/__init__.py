"""Conformance checks: a registry of small functions, one per rule of rules.md.

Every check has the same signature, `(ctx: Context) -> Iterator[Finding]`, and reads the facts
that the timeline, the replay pass and the turn pass already found. Messages say what was
expected, what came instead, and where (trace, session, seq). The rules live in these modules:
`replay_rules` (markers, resumes, loads), `subagent_rules` (child sessions, suggestions),
`fidelity_rules` (is the replay the session: `acp_trace.fidelity`), `weight_rules` (client
limits, deadlines and the quiet-window guess: `acp_trace.weight`),
`wire_rules` (JSON-RPC on stdio, imports),
`schema_rules` (the ACP JSON Schema), `profile_rules` (claude-agent-acp's signals) and
`remote_rules` (what only the remote transports can break: `acp-trace record --listen`); importing
them registers them in catalogue order. Every finding says who broke the rule (`side`).
`guesses` adds `import-unknown-error-code` and downgrades findings that rest on an importer's
guess (registered in `registry.ADJUSTERS`, run by `run_checks` before the severity filter);
`losses` qualifies the marker findings of a window where the recorder lost records.
`catalogue` holds every rule's id, severity, side and summary as data: importing this package
loads only that, and the registry's names (`RULES`, `run_checks`, ...) load the rule modules
on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from acp_trace.analysis.checks.catalogue import CATALOGUE, SEVERITIES, SIDES

if TYPE_CHECKING:
    from acp_trace.analysis.checks.registry import (
        FINDING_SCHEMA,
        RULES,
        Context,
        Finding,
        Rule,
        rule,
        run_checks,
    )

# The rule modules, in catalogue order: importing them registers their rules.
RULE_MODULES = (
    "replay_rules",
    "subagent_rules",
    "fidelity_rules",
    "weight_rules",
    "wire_rules",
    "schema_rules",
    "profile_rules",
    "guesses",
    "remote_rules",
    "losses",
)
_REGISTRY = {"FINDING_SCHEMA", "RULES", "Context", "Finding", "Rule", "rule", "run_checks"}

__all__ = [
    "CATALOGUE",
    "FINDING_SCHEMA",
    "RULES",
    "SEVERITIES",
    "SIDES",
    "Context",
    "Finding",
    "Rule",
    "rule",
    "run_checks",
]


def __getattr__(name: str) -> Any:
    """The registry's names load every rule module first (PEP 562): the catalogue alone
    (`CATALOGUE`, `SEVERITIES`, `SIDES`) loads no polars, for `acp-trace rules`."""
    if name not in _REGISTRY and name not in RULE_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in RULE_MODULES:
        import_module(f"{__name__}.{module}")
    registry = import_module(f"{__name__}.registry")
    value = getattr(registry, name) if name in _REGISTRY else globals()[name]
    globals()[name] = value
    return value
