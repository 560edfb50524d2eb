"""Tests of vendor end-of-replay events (rules.md, "Vendor end-of-replay events"): the AIR
event of claude-agent-acp, `--marker-meta PATH[=VALUE]`, and the columns `vendor_marker_ms`,
`gap_ms` and `gap_source` of the replays table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.vendor_events import KNOWN, json_equal, parse
from acp_trace.errors import UsageError
from tracebuilder import TraceBuilder

AIR_CAPS = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["loadReplayEnd"]}}}}
AIR_EVENT = {"jetbrains": {"air": {"version": 1, "loadReplayEnd": True}}}
AIR = "jetbrains.air.loadReplayEnd"


def _row(b: TraceBuilder, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    table = acp_trace.replays(b.write(tmp_path / "t.jsonl"), **kw)
    assert table.height == 1
    return table.row(0, named=True)


def _v1_load(event_meta: dict[str, Any] | None = AIR_EVENT) -> TraceBuilder:
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    rid = b.load("s", dt=0)
    b.update("s", "user_message_chunk", dt=5, content={"type": "text", "text": "q"})
    b.update("s", "agent_message_chunk", dt=5, content={"type": "text", "text": "a"})
    if event_meta is not None:
        b.update("s", "session_info_update", dt=2, _meta=event_meta)
    b.response(rid, {}, dt=800)
    return b


def _v2_resume(event: bool = True, marker: bool = False, stderr: bool = False) -> TraceBuilder:
    """As claude-agent-acp 0.101.0 answers a v2 resume from the start: history, the AIR event,
    a session_info_update, the state snapshot, the response (no replay_complete yet)."""
    b = TraceBuilder(capabilities=AIR_CAPS)
    rid = b.resume("s", dt=0)
    b.history("s", 1, dt=5)
    if stderr:
        b.text("stderr", "[session/load] phase=replay durationMs=3", dt=1)
    if marker:
        b.marker("s", dt=1)
    if event:
        b.update("s", "session_info_update", dt=4, _meta=AIR_EVENT)
    if stderr:
        b.text("stderr", "[session/load] phase=sdk-initialize durationMs=700", dt=700)
    b.update("s", "session_info_update", dt=100, title="t")
    b.state("s", dt=1)
    b.response(rid, {}, dt=1)
    return b


def test_v1_event_is_the_marker(tmp_path: Path) -> None:
    """In a v1 load the AIR event is the load's marker: timings filled, v1 outcome kept, the
    event counted neither as history nor live, and the gap's source named as the vendor
    event (`vendor:PATH`, rules.md: a vendor event is never called a marker)."""
    row = _row(_v1_load(), tmp_path)
    assert row["outcome"] == "v1_loaded"
    assert (row["marker_ms"], row["vendor_marker_ms"], row["marker_to_response_ms"]) == (
        12.0,
        12.0,
        800.0,
    )
    assert (row["gap_ms"], row["gap_source"]) == (800.0, "vendor:jetbrains.air.loadReplayEnd")
    assert (row["history_updates"], row["live_updates"]) == (2, 0)
    assert row["last_history_to_response_ms"] == 802.0


def test_v1_without_event_measures_from_last_history(tmp_path: Path) -> None:
    row = _row(_v1_load(None), tmp_path)
    assert (row["marker_ms"], row["vendor_marker_ms"]) == (None, None)
    assert (row["gap_ms"], row["gap_source"]) == (800.0, "last_history")


def test_v2_event_is_the_origin_of_the_gap_not_a_marker(tmp_path: Path) -> None:
    """In v2 the row stays unmarked (marker-missing stays), but the gap is measured from the
    event; the event is no live update."""
    b = _v2_resume()
    row = _row(b, tmp_path)
    assert (row["outcome"], row["marker_ms"], row["vendor_marker_ms"]) == ("unmarked", None, 14.0)
    assert (row["gap_ms"], row["gap_source"]) == (102.0, f"vendor:{AIR}")
    assert row["last_history_to_response_ms"] == 106.0
    assert row["live_updates"] == 2  # the title and the state snapshot, not the event
    rules = acp_trace.check(b.write(tmp_path / "t.jsonl"), schema=False)["rule"].to_list()
    assert rules == ["marker-missing"]


def test_v2_marker_wins_over_the_event(tmp_path: Path) -> None:
    row = _row(_v2_resume(marker=True), tmp_path)
    assert (row["outcome"], row["marker_ms"], row["vendor_marker_ms"]) == ("complete", 11.0, 15.0)
    assert (row["gap_ms"], row["gap_source"]) == (row["marker_to_response_ms"], "marker")


def test_no_gap_without_a_response(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.resume("s")
    b.history("s", 1)
    row = _row(b, tmp_path)
    assert (row["outcome"], row["gap_ms"], row["gap_source"]) == ("open", None, None)


def test_stderr_in_the_gap_counts_from_the_event(tmp_path: Path) -> None:
    """The gap the stderr columns look at starts at the vendor event in v2."""
    row = _row(_v2_resume(stderr=True), tmp_path)
    assert row["stderr_lines_in_gap"] == 1
    assert "sdk-initialize" in row["last_stderr_in_gap"]


def test_air_meta_on_other_updates_is_not_the_event(tmp_path: Path) -> None:
    """AIR metadata on a replayed tool call (`commandTitle`) is history, not the event."""
    b = TraceBuilder(protocol=1, capabilities=AIR_CAPS)
    rid = b.load("s", dt=0)
    b.update(
        "s", "tool_call", dt=5, toolCallId="t", _meta={"jetbrains": {"air": {"commandTitle": "ls"}}}
    )
    b.update("s", "session_info_update", dt=5, _meta={"jetbrains": {"air": {"loadReplayEnd": 1}}})
    b.response(rid, {}, dt=5)
    row = _row(b, tmp_path)
    assert (row["marker_ms"], row["vendor_marker_ms"], row["history_updates"]) == (None, None, 1)
    assert row["gap_source"] == "last_history"


@pytest.mark.parametrize(
    ("option", "meta", "matches"),
    [
        (AIR, AIR_EVENT, True),
        (AIR, {"jetbrains": {"air": {"commandTitle": "ls"}}}, False),
        (f"{AIR}=true", AIR_EVENT, True),
        (f"{AIR}=1", AIR_EVENT, False),
        ("jetbrains", {"jetbrains": {}}, True),
        ("jetbrains", {"jetbrainsX": {"air": 1}}, False),
        ("vendor.end", {"vendor.end": True}, True),  # a key that holds dots
        ("vendor.end", {"vendor": {"end": None}}, True),
        ('a.b={"x": [1, "y"]}', {"a": {"b": {"x": [1, "y"]}}}, True),
        ('a.b={"x": [1, "y"]}', {"a": {"b": {"x": [1, "y"], "z": 0}}}, False),
        ("a.b=null", {"a": {"b": None}}, True),
        ("a.b", {"a": "b"}, False),
    ],
)
def test_marker_meta_path_matched_whole(option: str, meta: dict[str, Any], matches: bool) -> None:
    """--marker-meta PATH[=VALUE]: the whole dotted path, with the JSON value when given."""
    msg = {"params": {"sessionId": "s", "update": {"sessionUpdate": "x", "_meta": meta}}}
    assert parse(option).matches(msg) is matches
    outer = {"params": {"sessionId": "s", "_meta": meta, "update": {"sessionUpdate": "x"}}}
    assert parse(option).matches(outer) is matches


@pytest.mark.parametrize("option", ["", ".a", "a..b", "a.b=tru", "a=", "a={"])
def test_bad_marker_meta_is_a_usage_error_before_reading(option: str, tmp_path: Path) -> None:
    """A bad --marker-meta is refused before any trace is read (the path does not exist)."""
    with pytest.raises(UsageError, match="--marker-meta"):
        acp_trace.analyze(tmp_path / "missing.jsonl", marker_meta=option or "=")


def test_marker_meta_on_v2_is_the_origin_of_the_gap(tmp_path: Path) -> None:
    b = TraceBuilder()
    rid = b.resume("s", dt=0)
    b.history("s", 1, dt=5)
    b.update("s", "notice", dt=3, _meta={"acme": {"done": True}})
    b.state("s", dt=50)
    b.response(rid, {}, dt=1)
    row = _row(b, tmp_path, marker_meta="acme.done=true")
    assert (row["outcome"], row["gap_source"], row["gap_ms"]) == (
        "unmarked",
        "vendor:acme.done",
        51.0,
    )
    assert row["live_updates"] == 1


def test_marker_meta_v1_expects_the_event_on_every_load(tmp_path: Path) -> None:
    """Named with --marker-meta, the event is expected on every v1 load (the user's word)."""
    path = _v1_load(None).write(tmp_path / "t.jsonl")
    assert acp_trace.check(path, schema=False).is_empty()
    found = acp_trace.check(path, marker_meta=AIR, schema=False)
    assert found.select("rule", "severity").rows() == [("marker-missing", "error")]


def test_json_equal_keeps_types() -> None:
    assert json_equal(True, True) and not json_equal(True, 1) and not json_equal(1, True)
    assert (
        not json_equal("1", 1)
        and not json_equal(None, 0)
        and json_equal([1, {"a": None}], [1, {"a": None}])
    )


def test_known_registry_starts_with_air() -> None:
    assert KNOWN[0].label == "jetbrains.air.loadReplayEnd = true"
    assert KNOWN[0].opt_in is not None
    assert KNOWN[0].opt_in({"clientCapabilities": AIR_CAPS})
    assert KNOWN[0].opt_in({"capabilities": AIR_CAPS})
    bad = {"_meta": {"jetbrains": {"air": {"version": True, "capabilities": ["loadReplayEnd"]}}}}
    assert not KNOWN[0].opt_in({"capabilities": bad})
    assert not KNOWN[0].opt_in({"capabilities": {"_meta": {"jetbrains": {"air": {"version": 1}}}}})


def test_replays_columns_in_every_table(tmp_path: Path) -> None:
    """The three columns stand after the other timings, typed."""
    schema = acp_trace.replays(_v1_load().write(tmp_path / "t.jsonl")).schema
    assert (schema["vendor_marker_ms"], schema["gap_ms"], schema["gap_source"]) == (
        pl.Float64,
        pl.Float64,
        pl.String,
    )
