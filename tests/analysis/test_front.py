"""Tests of the analyzer's front door: one Analysis, its tables computed once and kept."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.checks import registry
from acp_trace.analysis.schema import SchemaFacts
from tracebuilder import TraceBuilder


def _broken_prompt(tmp_path: Path) -> Path:
    """A v2 trace whose prompt breaks the schema (schema-invalid) and is never answered."""
    b = TraceBuilder(protocol=None)
    rid = b.request(
        "initialize", {"protocolVersion": 2, "info": {"name": "client", "version": "1"}}
    )
    b.response(rid, {"protocolVersion": 2, "info": {"name": "agent", "version": "1"}})
    b.request("session/prompt", {"sessionId": "s", "content": "not a list"})
    return b.write(tmp_path / "t.jsonl")


def test_findings_run_the_schema_pass_once_per_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls with other rule filters reuse the first schema pass; --no-schema runs none."""
    calls: list[int] = []
    validate = registry.validate_timeline

    def counted(tl: pl.DataFrame) -> SchemaFacts:
        calls.append(tl.height)
        return validate(tl)

    monkeypatch.setattr(registry, "validate_timeline", counted)
    a = acp_trace.analyze(_broken_prompt(tmp_path))
    everything = a.findings()
    assert "schema-invalid" in everything["rule"].to_list()
    only = a.findings(["schema-invalid"], "error")
    assert a.findings().equals(everything)
    assert len(calls) == 1
    assert only["rule"].unique().to_list() == ["schema-invalid"]
    fresh = acp_trace.analyze(_broken_prompt(tmp_path)).findings(["schema-invalid"], "error")
    assert only.equals(fresh)
    unvalidated = a.findings(schema=False)
    assert len(calls) == 2  # the fresh Analysis' own pass; schema=False ran none
    assert "schema-invalid" not in unvalidated["rule"].to_list()
