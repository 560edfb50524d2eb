"""The gap explained: stderr lines inside each replay's gap and the phases they name."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.phase_patterns import Phase, parse_phase
from acp_trace.analysis.phases import largest_phases, printable
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

CLAUDE = "[session/create] sessionId=s1 phase=sdk-initialize durationMs=730 totalMs=800"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (CLAUDE, Phase("sdk-initialize", "claude-agent-acp", 730.0)),
        (
            "[session/load] sessionId=s phase=session-ready durationMs=1455 totalMs=1455",
            Phase("session-ready", "claude-agent-acp", 1455.0),
        ),
        (
            "[STARTUP] Recording metric for phase: cli_startup duration: 12.5",
            Phase("cli_startup", "gemini-cli", 12.5),
        ),
        ("load_ms=12", Phase("load", "generic", 12.0)),
        ("sdk_duration=1.5s", Phase("sdk", "generic", 1500.0)),
        ("init.elapsed=40ms", Phase("init", "generic", 40.0)),
        ("initElapsed=40ms", Phase("init", "generic", 40.0)),
        ("resume finished elapsed_ms=7 rows=3", Phase("elapsed", "generic", 7.0)),
        ("took=250us", Phase("took", "generic", 0.25)),
        # near misses: settings, counts and claude lines without a duration are no phases
        ("timeout_ms=30000", None),
        ("retry_interval_ms=500", None),
        ("max_ms=10", None),
        ("size=12 count=3", None),
        # counts whose names end in a unit's letters: no separator, no camelCase hump
        ("loaded rows=176 items=3 messages=400 tokens=5 turns=2", None),
        ("waitSecs=2 retries=1", Phase("wait", "generic", 2000.0)),
        ("mistook=3 latency=4", Phase("latency", "generic", 4.0)),
        ("[session/query] sessionId=s resume=s apiType=native baseUrl=native", None),
        ("[STARTUP] Phase 'cli_startup' was started but never ended. Skipping metrics.", None),
        ("phase=sdk-initialize durationMs=730", Phase("duration", "generic", 730.0)),
        ("", None),
    ],
)
def test_parse_phase(line: str, expected: Phase | None) -> None:
    """Each family's pattern, the generic key=value fallback, and lines that name no phase."""
    assert parse_phase(line) == expected


def _replay_with_stderr(tmp_path: Path) -> Path:
    b = TraceBuilder(agent="claude-agent-acp", version="0.101.0")
    b.text("stderr", "[session/create] sessionId=s1 phase=validate-cwd durationMs=0 totalMs=0")
    rid = b.resume("s1", dt=10)
    b.text("stderr", "[session/replay] sessionId=s1 phase=read durationMs=5 messages=4", dt=5)
    b.history("s1", 2, dt=1)  # the request at t = 13 ms, the last history update at 22 ms
    b.text("stderr", "[authStatus] no identity signal", dt=100)
    b.text("stderr", CLAUDE, dt=630)  # at 752 ms: sdk-initialize ran from 22 to 752 ms
    b.text("stderr", "[session/load] sessionId=s1 phase=session-ready durationMs=790", dt=10)
    b.state("s1", dt=27)
    b.response(rid, dt=0)  # at 789 ms: the gap is 22 -> 789 ms (767 ms)
    b.text("stderr", "[session/load] sessionId=s1 phase=after durationMs=3", dt=5)
    return b.write(tmp_path / "t.jsonl")


def test_stderr_lines_inside_the_gap_are_counted(tmp_path: Path) -> None:
    """Only lines after the last history update and before the response count; the last one
    is shown."""
    row = acp_trace.replays(_replay_with_stderr(tmp_path)).row(0, named=True)
    assert row["last_history_to_response_ms"] == pytest.approx(767.0)
    assert row["stderr_lines_in_gap"] == 3
    assert row["last_stderr_in_gap"] == (
        "[session/load] sessionId=s1 phase=session-ready durationMs=790"
    )


def test_gap_phases_name_start_duration_and_leaf(tmp_path: Path) -> None:
    """A phase spans [t - duration, t] in ms after the request; the umbrella phase that holds
    another is no leaf; the largest leaf per agent is the report's answer."""
    a = acp_trace.analyze(_replay_with_stderr(tmp_path))
    phases = a.gap_phases
    assert phases["phase"].to_list() == ["sdk-initialize", "session-ready"]
    sdk = phases.row(0, named=True)
    assert sdk["start_ms"] == pytest.approx(739.0 - 730.0)  # logged 739 ms after the request
    assert sdk["duration_ms"] == 730.0 and sdk["in_gap_ms"] == pytest.approx(730.0)
    assert sdk["leaf"] is True and phases["leaf"][1] is False
    assert sdk["seq"] == 11 and sdk["line"] == CLAUDE
    largest = largest_phases(phases, a.replays).row(0, named=True)
    assert (largest["phase"], round(largest["gap_ms"])) == ("sdk-initialize", 767)


def test_no_gap_no_count(tmp_path: Path) -> None:
    """A replay that never got its response has no gap: the count is null, no phase is listed."""
    b = TraceBuilder()
    b.resume("s1")
    b.history("s1", 1)
    b.text("stderr", "load_ms=5")
    a = acp_trace.analyze(b.write(tmp_path / "t.jsonl"))
    assert a.replays["stderr_lines_in_gap"].to_list() == [None]
    assert a.gap_phases.height == 0


def test_a_line_of_another_trace_is_not_in_the_gap(tmp_path: Path) -> None:
    """stderr of one trace never counts for a replay of another trace in the same analysis."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.history("s1", 1)
    b.response(rid, dt=50)
    other = TraceBuilder()
    other.text("stderr", "load_ms=5", dt=20)
    a = acp_trace.analyze([b.write(tmp_path / "a.jsonl"), other.write(tmp_path / "b.jsonl")])
    assert a.replays["stderr_lines_in_gap"].to_list() == [0]


def test_printable_escapes_what_moves_a_terminal() -> None:
    """ESC, BEL, bidi overrides and lone surrogates are written as escapes."""
    assert printable("a\x1b[31mb\x07\u202ec\ud83d ok") == "a\\x1b[31mb\\x07\\u202ec\\ud83d ok"


def test_the_real_claude_recording_names_sdk_initialize() -> None:
    """On the recorded claude-agent-acp 0.101.0 cold resume, the largest leaf phase inside the
    gap is sdk-initialize (the CLI starting), most of the gap."""
    a = acp_trace.analyze(SAMPLES / "claude-agent-acp-v2-resume.jsonl")
    largest = largest_phases(a.gap_phases, a.replays).row(0, named=True)
    assert largest["phase"] == "sdk-initialize"
    assert 0.8 < largest["in_gap_ms"] / largest["gap_ms"] <= 1.0
    assert a.replays.filter(pl.col("stderr_lines_in_gap") > 0).height == 1


def test_stderr_between_lists_a_windows_lines_with_their_phases(tmp_path: Path) -> None:
    """Every stderr line strictly between two rows of one trace, with the phase it names (null
    when none) and whether it is a leaf among those lines; other traces' lines never."""
    from acp_trace.analysis.phases import stderr_between

    a = acp_trace.analyze(_replay_with_stderr(tmp_path))
    tl = a.timeline
    (w,) = [w for w in a.facts.windows if w.replaying]
    lines = stderr_between(tl, w.trace, w.req_row, w.end_row)
    assert lines["phase"].to_list() == ["read", None, "sdk-initialize", "session-ready"]
    assert lines["leaf"].to_list() == [True, None, True, False]
    assert lines["duration_ms"].to_list() == [5.0, None, 730.0, 790.0]
    assert lines["text"][1] == "[authStatus] no identity signal"
    everything = stderr_between(tl, w.trace, -1, None)
    assert everything["phase"].to_list() == [
        "validate-cwd", "read", None, "sdk-initialize", "session-ready", "after",
    ]  # fmt: skip
    assert stderr_between(tl, "another.jsonl", -1, None).height == 0
