"""The weight fields of replay rows and the three weight rules (rules.md "Replay weight, client
limits and deadlines"), on traces built to the millisecond."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from acp_trace.analysis import analyze
from acp_trace.weight import weight_options
from tracebuilder import TraceBuilder

WEIGHT_RULES = ["frame-over-client-limit", "silence-past-client-deadline"]
WEIGHT_RULES += ["replay-outlasts-quiet-window"]


def _row(tmp_path: Path, b: TraceBuilder, **options: Any) -> dict[str, Any]:
    a = analyze(b.write(tmp_path / "t.jsonl"), weight=weight_options(**options))
    return a.replays.row(0, named=True)


def _findings(tmp_path: Path, b: TraceBuilder, **options: Any) -> pl.DataFrame:
    a = analyze(b.write(tmp_path / "t.jsonl"), weight=weight_options(**options))
    return a.findings(WEIGHT_RULES)


def _big(session: str, n: int) -> dict[str, Any]:
    """A tool_call_update whose line is about `n` bytes."""
    return {"toolCallId": "t1", "status": "completed", "rawOutput": "x" * n}


def test_bytes_by_kind_sums_to_history_bytes_and_stops_at_the_marker(tmp_path: Path) -> None:
    """Per kind, the history bytes before the marker; their sum is history_bytes."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.history("s1", 2)
    b.update("s1", "tool_call_update", **_big("s1", 100))
    b.marker("s1")
    b.update("s1", "agent_message", messageId="late", content=[])  # after the marker
    b.state("s1")
    b.response(rid, {})
    row = _row(tmp_path, b)
    kinds = {d["kind"]: d["bytes"] for d in row["bytes_by_kind"]}
    assert set(kinds) == {"user_message", "agent_message", "tool_call_update"}
    assert sum(kinds.values()) == row["history_bytes"]
    assert row["bytes_by_kind"][0]["kind"] == "agent_message"  # the largest first
    assert row["largest_update_kind"] == "tool_call_update"
    assert row["largest_update_seq"] == 8  # init 2 + resume + 4 history + the update


def test_largest_line_counts_a_batch_whole_and_a_cut_record_by_its_announced_length(
    tmp_path: Path,
) -> None:
    """A batch is one line; a record the tap cut counts with its `bytes`, its session and
    kind read from its first bytes; the earliest wins a tie."""
    b = TraceBuilder()
    rid = b.resume("s1")
    update = {"jsonrpc": "2.0", "method": "session/update"}
    element = {**update, "params": {"sessionId": "s1", "update": {"sessionUpdate": "plan"}}}
    seq = b.send("agent", [element, element])
    row = _row(tmp_path, b)  # no response yet: the window runs to the trace's end
    line = len(b.lines[-1]) - len(f'{{"seq":{seq},"t_ns":{b.t_ns},"src":"agent","msg":}}')
    assert row["largest_update_bytes"] == line
    assert row["largest_update_seq"] == seq
    cut = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    cut += '{"sessionUpdate":"tool_call_update","rawOutput":"xxxx'
    seq = b.raw("agent", {"text": cut, "truncated": True, "bytes": 10**9})
    b.response(rid, {})
    row = _row(tmp_path, b)
    assert (row["largest_update_bytes"], row["largest_update_kind"]) == (10**9, "tool_call_update")
    assert row["largest_update_seq"] == seq


def test_children_bytes_sum_the_covered_children_at_any_depth(tmp_path: Path) -> None:
    """The parent row holds its children's and grandchildren's history bytes."""
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c", status="running")
    b.history("c", 1)
    b.update("c", "subagent_update", sessionId="g", status="running")
    b.history("g", 1)
    for s in ("g", "c", "p"):
        b.marker(s)
    b.state("p")
    b.response(rid, {})
    a = analyze(b.write(tmp_path / "t.jsonl"))
    rows = {r["session"]: r for r in a.replays.iter_rows(named=True)}
    assert set(rows) == {"p", "c", "g"}
    assert rows["p"]["children_bytes"] == rows["c"]["history_bytes"] + rows["g"]["history_bytes"]
    assert rows["c"]["children_bytes"] == rows["g"]["history_bytes"] > 0
    assert rows["g"]["children_bytes"] == 0


def test_longest_silence_counts_agent_stdout_only_and_ignores_time_going_back(
    tmp_path: Path,
) -> None:
    """stderr and client lines do not end a silence; a record stamped earlier than the one
    before is no silence and the next one is measured from the latest time."""
    b = TraceBuilder()
    rid = b.resume("s1", dt=1)
    b.history("s1", 1, dt=100)  # two updates: 100 and 200 ms after the request
    b.text("stderr", "working", dt=500)
    b.notify("$/ping", {}, src="client", dt=500)
    b.history("s1", 1, dt=400)  # 1,400 ms after the last agent line, then 400 ms
    b.t_ns -= 5_000_000_000  # the clock goes back 5 s
    b.marker("s1", dt=1)
    b.state("s1", dt=5_050)  # 50 ms past the latest time seen
    b.response(rid, {}, dt=1)
    row = _row(tmp_path, b)
    assert row["longest_silence_ms"] == pytest.approx(1400)


@pytest.mark.parametrize(
    ("gaps", "window", "quiet_end", "after"),
    [
        ([10, 10, 300, 10], 250, 270, 2),  # the pause of 300 ms: quiet at 20 + 250
        ([10, 10, 250, 10], 250, 270, 2),  # exactly the window: too late
        ([10, 10, 249, 10], 250, None, None),  # never quiet before the response
        ([10, 10, 300, 10], 400, None, None),
    ],
)
def test_quiet_end_and_the_updates_after_it(
    tmp_path: Path, gaps: list[int], window: float, quiet_end: float | None, after: int | None
) -> None:
    """quiet_end_ms: the first pause of --quiet-window after the first update; the history
    updates after it are counted; null when the response comes first."""
    b = TraceBuilder()
    rid = b.resume("s1")
    for gap in gaps:
        b.update("s1", "agent_message", dt=gap, messageId=f"m{b.seq}", content=[])
    b.marker("s1", dt=10)
    b.state("s1", dt=10)
    b.response(rid, {}, dt=100)
    row = _row(tmp_path, b, quiet_window_ms=window)
    assert row["quiet_end_ms"] == (None if quiet_end is None else pytest.approx(quiet_end))
    assert row["updates_after_quiet_end"] == after
    found = _findings(tmp_path, b, quiet_window_ms=window)
    quiet = found.filter(pl.col("rule") == "replay-outlasts-quiet-window")
    assert quiet.height == (1 if after else 0)
    if after:
        assert "2 history updates on s1" in quiet["message"][0]


def test_the_quiet_cap_ends_a_replay_that_never_pauses(tmp_path: Path) -> None:
    """With no pause, the client stops waiting at --quiet-cap after the request."""
    b = TraceBuilder()
    rid = b.resume("s1", dt=1)
    for _ in range(30):
        b.update("s1", "agent_message", dt=100, messageId=f"m{b.seq}", content=[])
    b.state("s1", dt=10)
    b.response(rid, {}, dt=10)
    row = _row(tmp_path, b, quiet_cap_ms=1_000)
    assert row["quiet_end_ms"] == 1_000
    assert row["updates_after_quiet_end"] == 21  # the updates at 1,000 ... 3,000 ms


def test_frame_over_client_limit_once_per_trace_side_and_largest_limit(tmp_path: Path) -> None:
    """Lines grouped by the largest limit each passes, per side, with count and first seq; a
    user's --frame-limit joins the known ones."""
    b = TraceBuilder()
    rid = b.resume("s1")
    first = b.update("s1", "tool_call_update", **_big("s1", 70_000))
    b.update("s1", "tool_call_update", **_big("s1", 80_000))
    b.update("s1", "tool_call_update", **_big("s1", 5_000))
    client = b.notify("$/note", {"text": "y" * 70_000}, src="client")
    b.state("s1")
    b.response(rid, {})
    found = _findings(tmp_path, b).filter(pl.col("rule") == "frame-over-client-limit")
    assert found.select("side", "seq").rows() == [("agent", first), ("client", client)]
    assert "2 lines passed it, the first at seq" in found["message"][0]
    assert "64 KiB (65,536 bytes" in found["message"][0]
    found = _findings(tmp_path, b, frame_limits=["75000=mine"])
    found = found.filter(pl.col("rule") == "frame-over-client-limit")
    assert found.height == 3
    assert any("mine (75,000 bytes: mine)" in m for m in found["message"])


def test_silence_past_a_deadline_in_a_replay_and_a_session_new(tmp_path: Path) -> None:
    """Once per window, naming the largest deadline passed; a user's --deadline counts."""
    b = TraceBuilder()
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "s1"}, dt=2_500)
    rid = b.resume("s1")
    b.history("s1", 1, dt=6_000)
    b.marker("s1")
    b.state("s1")
    b.response(rid, {})
    found = _findings(tmp_path, b).filter(pl.col("rule") == "silence-past-client-deadline")
    assert found.height == 2
    assert "every 2 s" in found["message"][0] and "2,500 ms" in found["message"][0]
    assert "every 5 s" in found["message"][1] and "6,000 ms" in found["message"][1]
    found = _findings(tmp_path, b, deadlines=["5500=slow-editor"])
    found = found.filter(pl.col("rule") == "silence-past-client-deadline")
    assert "every slow-editor" in found["message"][1]


def test_a_window_with_no_agent_line_and_an_untimed_trace(tmp_path: Path) -> None:
    """No agent line at all: the silence is the whole window, nothing is largest; without
    times every time field is null."""
    b = TraceBuilder()
    b.resume("s1")
    b.notify("$/ping", {}, src="client", dt=3_000)
    row = _row(tmp_path, b)
    assert row["longest_silence_ms"] == pytest.approx(3_000)
    assert row["largest_update_bytes"] is None and row["bytes_by_kind"] == []
    assert row["quiet_end_ms"] is None  # the trace ended before the cap
