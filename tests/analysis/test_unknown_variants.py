"""Unknown `sessionUpdate` variants are tolerated everywhere: claude-agent-acp 0.101.0 sends
`subagent_state_update`, `subagent_spawned` and `async_task_*`, which no schema names. In v2 the
enum-variant extension rule allows them ("A Client that does not know the variant ignores it"):
never an error, not in the schema validation, not in the ordering rules."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import acp_trace
from tracebuilder import TraceBuilder

UNKNOWN = ("subagent_state_update", "subagent_spawned", "async_task_started", "async_task_done")


@pytest.mark.parametrize("protocol", [1, 2])
def test_unknown_variants_are_never_findings(tmp_path: Path, protocol: int) -> None:
    """Unknown kinds inside a replay window, before a child's announcement and in a prompt turn:
    no finding points at them, schema validation included."""
    b = TraceBuilder(protocol=protocol, capabilities={"subagents": {}} if protocol == 1 else {})
    seqs = []
    rid = b.load("s") if protocol == 1 else b.resume("s")
    seqs.append(b.update("s", "subagent_spawned", subagentId="c", extra={"any": [1]}))
    if protocol == 2:
        b.history("s", 1)
    seqs.append(b.update("c", "subagent_state_update", state="running"))
    seqs.append(b.update("s", "async_task_started", taskId="t"))
    if protocol == 2:
        b.marker("s")
        b.state("s")
    b.response(rid, {})
    seqs.append(b.update("s", "async_task_done", taskId="t"))
    b.update("s", "subagent_update", sessionId="c")
    found = acp_trace.check(b.write(tmp_path / "t.jsonl"))
    at_unknown = found.filter(pl.col("seq").is_in(seqs))
    assert at_unknown.is_empty(), at_unknown.to_dicts()
    assert not any(kind in m for m in found["message"].to_list() for kind in UNKNOWN)
    timeline = acp_trace.timeline(tmp_path / "t.jsonl")
    classes = timeline.filter(pl.col("update_kind").is_in(UNKNOWN))["update_class"]
    assert set(classes.to_list()) == {"unknown"}
