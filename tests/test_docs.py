"""Tests that keep the documentation in step with the code."""

from __future__ import annotations

import re
from pathlib import Path

from acp_trace.analysis.checks import RULES

ROOT = Path(__file__).resolve().parents[1]


def _documented_rules() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "rules.md").read_text()
    found: dict[str, tuple[str, str]] = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        rule_id = block.splitlines()[0].strip()
        severity = re.search(r"^- severity: (\w+)", block, flags=re.M)
        side = re.search(r"^- side: (\w+)", block, flags=re.M)
        assert severity, f"{rule_id} has no severity line"
        assert side, f"{rule_id} has no side line"
        found[rule_id] = (severity.group(1), side.group(1))
        for part in ("- broken when:", "- breaking sequence:", "- what to do"):
            assert part in block, f"{rule_id} lacks {part!r}"
    return found


def test_rules_doc_matches_registry() -> None:
    """docs/rules.md documents exactly the registered rules, with their default severities and
    the side each blames."""
    assert _documented_rules() == {r.id: (r.severity, r.side) for r in RULES.values()}
