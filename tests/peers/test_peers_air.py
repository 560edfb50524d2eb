"""claude-agent-acp 0.101.0's end-of-replay event, live: a client that advertises JetBrains
AIR's `loadReplayEnd` (demo-client --air) gets one `session_info_update` carrying
`_meta.jetbrains.air.loadReplayEnd = true` after the whole replay; the analyzer takes it as a
v1 load's marker and as the origin of a v2 resume's gap (rules.md, "Vendor end-of-replay
events"), and a client that does not ask gets none and no finding about it."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from conftest import SID, TURNS, RecordPeer, agent_messages, window_updates
from test_peers import RESUME_ID, assert_transparent, history, rules_found

import acp_trace

pytestmark = pytest.mark.peers

AIR = "jetbrains.air.loadReplayEnd"
MARKER_RULES = {"marker-missing", "marker-duplicate", "marker-late", "marker-unexpected"}


def _is_air_event(msg: Any) -> bool:
    update = (msg.get("params") or {}).get("update") if isinstance(msg, dict) else None
    meta = update.get("_meta") if isinstance(update, dict) else None
    air = ((meta or {}).get("jetbrains") or {}).get("air") if isinstance(meta, dict) else None
    return isinstance(air, dict) and air.get("loadReplayEnd") is True


def _rows(run: Any) -> list[dict[str, Any]]:
    table = acp_trace.replays([run.trace])
    return table.filter(pl.col("session") == SID).to_dicts()


def test_v1_loads_end_with_the_air_event(record_peer: RecordPeer) -> None:
    """Two v1 loads for an AIR client: each sends the event last before its response; each row
    is v1_loaded with the event as its marker, and nothing is flagged about markers."""
    run = record_peer("claude-agent-acp", 1, resumes=2, client_args=("--air",))
    assert_transparent(run)
    events = [m for m in agent_messages(run) if _is_air_event(m)]
    assert len(events) == 2
    window = window_updates(run, RESUME_ID)
    assert _is_air_event({"params": {"update": window[-1]}})  # the last update of the load
    rows = _rows(run)
    assert [r["outcome"] for r in rows] == ["v1_loaded", "v1_loaded"]
    for row in rows:
        assert row["marker_ms"] is not None and row["marker_ms"] == row["vendor_marker_ms"]
        assert (
            row["gap_source"] == f"vendor:{AIR}" and row["gap_ms"] == row["marker_to_response_ms"]
        )
        assert row["history_updates"] == len(history(window)) == 2 * TURNS
    assert not rules_found(run) & MARKER_RULES
    # claude-agent-acp's available_commands_update can land right after the second load's
    # request (seen here): inside the window, before the event, on a session already active:
    # a warning by rules.md, never an error; the first load's window holds none.
    early = acp_trace.check([run.trace]).filter(pl.col("rule") == "live-before-marker")
    assert set(early["severity"].to_list()) <= {"warning"}


def test_v2_resume_gap_is_measured_from_the_air_event(record_peer: RecordPeer) -> None:
    """A v2 resume from the start for an AIR client: still no replay_complete (unmarked,
    marker-missing), the gap measured from the event, which is neither history nor live."""
    run = record_peer("claude-agent-acp", 2, client_args=("--air",))
    assert_transparent(run)
    window = window_updates(run, RESUME_ID)
    assert sum(_is_air_event({"params": {"update": u}}) for u in window) == 1
    (row,) = _rows(run)
    assert (row["outcome"], row["marker_ms"]) == ("unmarked", None)
    assert row["gap_source"] == f"vendor:{AIR}"
    assert row["vendor_marker_ms"] <= row["response_ms"]
    assert row["gap_ms"] == pytest.approx(row["response_ms"] - row["vendor_marker_ms"])
    live = [u for u in window if u.get("sessionUpdate") in ("session_info_update", "state_update")]
    assert row["live_updates"] == len(live) - 1  # the event is no live update
    assert "marker-missing" in rules_found(run)


def test_without_the_capability_no_event_and_no_finding(record_peer: RecordPeer) -> None:
    """A v1 client that does not ask gets no event: the gap falls back to the last history
    update, and no marker finding blames the agent for an event nobody asked for."""
    run = record_peer("claude-agent-acp", 1, resumes=2)
    assert_transparent(run)
    assert not any(_is_air_event(m) for m in agent_messages(run))
    rows = _rows(run)
    assert [r["gap_source"] for r in rows] == ["last_history", "last_history"]
    assert [r["vendor_marker_ms"] for r in rows] == [None, None]
    assert not rules_found(run) & MARKER_RULES
