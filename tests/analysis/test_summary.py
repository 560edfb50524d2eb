"""`acp-trace summary` reports what the recorder had to do: errors, kills, drops, a removed trace."""

from __future__ import annotations

from pathlib import Path

import pytest

import acp_trace
from acp_trace.analysis.summary import summarize
from acp_trace.render.report import format_summary
from tracebuilder import TraceBuilder


def recorded(tmp_path: Path, *events: tuple[str, dict[str, object]]) -> dict[str, object]:
    b = TraceBuilder()
    b.update("s", "agent_message_chunk")
    for name, fields in events:
        b.event(name, **fields)
    b.event("exit", code=0, signal=None)
    return summarize(acp_trace.read_trace(b.write(tmp_path / "t.jsonl"))).row(0, named=True)


def test_recorder_errors_kills_and_drops_are_in_the_summary(tmp_path: Path) -> None:
    """Every `error` (its message and seq), every `kill` (signal and why) and the `dropped`
    counts are in the summary row and in its text, one line each."""
    row = recorded(
        tmp_path,
        ("dropped", {"count": 3, "stream": "agent"}),
        (
            "error",
            {
                "message": "cannot write the trace t.jsonl: No space left on device",
                "cause": "write",
            },
        ),
        ("kill", {"signal": 15, "reason": "the agent outlived the client's stdin by 3 s"}),
        ("dropped", {"count": 2, "stream": "client"}),
    )
    assert row["dropped"] == 5 and row["trace_removed"] is False
    assert [e["message"] for e in row["tap_errors"]] == [
        "cannot write the trace t.jsonl: No space left on device"
    ]  # type: ignore[union-attr,index]
    assert row["kills"] == [
        {"seq": 6, "signal": 15, "reason": "the agent outlived the client's stdin by 3 s"}
    ]
    text = format_summary(summarize(acp_trace.read_trace(tmp_path / "t.jsonl")))
    assert "  lost records: 5 dropped by the tap\n" in text
    assert (
        "  recorder error at seq 5: cannot write the trace t.jsonl: No space left on device\n"
        in text
    )
    assert (
        "  the recorder ended the agent with signal 15 at seq 6: the agent outlived the client's stdin by 3 s\n"
        in text
    )


def test_a_trace_removed_while_recording_is_said(tmp_path: Path) -> None:
    """A trace whose recorder found it removed says so (the error's cause is `removed`)."""
    message = "the trace t.jsonl was removed while recording (its link count is 0)"
    row = recorded(tmp_path, ("error", {"message": message, "cause": "removed"}))
    assert row["trace_removed"] is True
    text = format_summary(summarize(acp_trace.read_trace(tmp_path / "t.jsonl")))
    assert "the trace was removed while recording: what came after is not in it" in text


def test_a_clean_recording_adds_no_lines(tmp_path: Path) -> None:
    """Without recorder events the summary is as it was: no error, kill or removal lines."""
    row = recorded(tmp_path)
    assert row["tap_errors"] == [] and row["kills"] == [] and row["trace_removed"] is False
    text = format_summary(summarize(acp_trace.read_trace(tmp_path / "t.jsonl")))
    assert "recorder" not in text and "removed" not in text


def test_control_characters_in_a_message_never_reach_the_terminal(tmp_path: Path) -> None:
    """An error message from a (hostile) trace is shown with its control characters escaped."""
    recorded(tmp_path, ("error", {"message": "bad \x1b]0;owned\x07 name"}))
    text = format_summary(summarize(acp_trace.read_trace(tmp_path / "t.jsonl")))
    assert "\x1b" not in text and "\x07" not in text
    assert "bad \\x1b]0;owned\\x07 name" in text


@pytest.mark.parametrize(
    ("count", "dropped"),
    [
        (3, 3),
        (0, 0),
        # near misses: no count an integer >= 0 still says something was dropped
        ("many", 1),
        (2**63, 1),  # no 64-bit count
        (-2, 1),
        (2.5, 1),
        (True, 1),
        (None, 1),
        ([3], 1),
    ],
)
def test_a_dropped_count_that_is_no_count_counts_one(
    tmp_path: Path, count: object, dropped: int
) -> None:
    """A `dropped` event adds its count; one whose count is no integer >= 0 adds one."""
    assert (
        recorded(tmp_path, ("dropped", {"count": count, "stream": "agent"}))["dropped"] == dropped
    )
