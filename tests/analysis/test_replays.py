"""Tests of the replays table: every outcome and every timing field of rules.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

import acp_trace
from tracebuilder import TraceBuilder


def _replays(b: TraceBuilder, tmp_path: Path, **kw: object) -> pl.DataFrame:
    return acp_trace.replays(b.write(tmp_path / "t.jsonl"), **kw)  # type: ignore[arg-type]


def _v2(marker: bool, end: Callable[[TraceBuilder, object], None], turns: int = 2) -> TraceBuilder:
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", turns)
    if marker:
        b.marker("s")
    end(b, rid)
    return b


def _ok(b: TraceBuilder, rid: object) -> None:
    b.state("s")
    b.response(rid, {})


def _err(code: int) -> Callable[[TraceBuilder, object], None]:
    return lambda b, rid: b.error(rid, code)


def _exit(b: TraceBuilder, rid: object) -> None:
    b.event("exit", code=1, signal=None)


def _agent_eof(b: TraceBuilder, rid: object) -> None:
    b.event("eof", stream="agent")


def _client_eof(b: TraceBuilder, rid: object) -> None:
    b.event("eof", stream="client")


def _nothing(b: TraceBuilder, rid: object) -> None:
    pass


@pytest.mark.parametrize(
    ("marker", "end", "outcome"),
    [
        (True, _ok, "complete"),
        (True, _err(-32603), "complete_failed"),
        (True, _exit, "complete_failed"),
        (True, _agent_eof, "complete_failed"),
        (False, _err(-32603), "truncated"),
        (False, _err(-32800), "truncated"),
        (False, _exit, "truncated"),
        (False, _agent_eof, "truncated"),
        (False, _ok, "unmarked"),
        (False, _err(-32602), "rejected"),
        (True, _err(-32602), "complete_failed"),
        (False, _nothing, "open"),
        (True, _nothing, "open"),
        (False, _client_eof, "open"),
    ],
)
def test_v2_outcomes(tmp_path: Path, marker: bool, end: Callable, outcome: str) -> None:
    """A v2 replaying resume gets the outcome of the rules.md table for its marker and ending."""
    rows = _replays(_v2(marker, end), tmp_path)
    assert rows["outcome"].to_list() == [outcome]


def _v1(end: Callable[[TraceBuilder, object], None]) -> TraceBuilder:
    b = TraceBuilder(protocol=1)
    rid = b.load("s")
    b.update("s", "user_message_chunk")
    end(b, rid)
    return b


@pytest.mark.parametrize(
    ("end", "outcome"),
    [
        (lambda b, rid: b.response(rid, {}), "v1_loaded"),
        (_err(-32603), "v1_failed"),
        (_exit, "v1_failed"),
        (_nothing, "open"),
    ],
)
def test_v1_outcomes(tmp_path: Path, end: Callable, outcome: str) -> None:
    """A v1 session/load is v1_loaded, v1_failed (error or connection end) or open."""
    assert _replays(_v1(end), tmp_path)["outcome"].to_list() == [outcome]


def test_unknown_session_is_truncated_with_no_history(tmp_path: Path) -> None:
    """A resume of an unknown session answered -32002 is truncated with 0 history updates."""
    b = TraceBuilder()
    rid = b.resume("nope")
    b.error(rid, -32002, data={"sessionId": "nope"})
    row = _replays(b, tmp_path).row(0, named=True)
    assert (row["outcome"], row["history_updates"], row["first_update_ms"]) == (
        "truncated",
        0,
        None,
    )


@pytest.mark.parametrize(
    "request_params",
    [
        {"sessionId": "s", "cwd": "/"},
        {"sessionId": "s", "cwd": "/", "replayFrom": None},
    ],
)
def test_resume_without_cursor_is_not_a_replay(tmp_path: Path, request_params: dict) -> None:
    """A v2 resume without replayFrom (or with null) has no replays row."""
    b = TraceBuilder()
    rid = b.request("session/resume", request_params)
    b.state("s")
    b.response(rid, {})
    assert _replays(b, tmp_path).height == 0


def test_v1_resume_is_not_a_replay(tmp_path: Path) -> None:
    """A v1 session/resume never replays, so it has no replays row."""
    b = TraceBuilder(protocol=1)
    rid = b.request(
        "session/resume", {"sessionId": "s", "cwd": "/", "replayFrom": {"type": "start"}}
    )
    b.response(rid, {})
    assert _replays(b, tmp_path).height == 0


def test_timings(tmp_path: Path) -> None:
    """Every timing field is the difference of the tap times named in rules.md, in ms."""
    b = TraceBuilder()
    rid = b.resume("s", dt=0)  # R at t0
    b.update("s", "user_message", dt=10, messageId="m1")  # +10: first update
    b.update("s", "agent_message", dt=5, messageId="m2")  # +15: last history
    b.update("s", "brand_new_kind", dt=5)  # +20: unknown, neither counted
    b.marker("s", dt=10)  # +30
    b.update("s", "notice", dt=10)  # +40: live, after the marker: not counted
    b.state("s", dt=10)  # +50
    b.response(rid, {}, dt=450)  # +500
    row = _replays(b, tmp_path).row(0, named=True)
    assert row["first_update_ms"] == 10.0
    assert row["last_history_ms"] == 15.0
    assert row["marker_ms"] == 30.0
    assert row["state_ms"] == 50.0
    assert row["response_ms"] == 500.0
    assert row["marker_to_response_ms"] == 470.0
    assert row["last_history_to_response_ms"] == 485.0
    assert (row["history_updates"], row["live_updates"]) == (2, 0)


def test_counts_without_marker_use_the_whole_window(tmp_path: Path) -> None:
    """Without a marker, counts and last history cover the whole window up to the response."""
    b = TraceBuilder()
    rid = b.resume("s", dt=0)
    b.update("s", "agent_message", dt=5, messageId="m")
    b.update("s", "notice", dt=5)
    b.update("s", "session_info_update", dt=5)
    b.update("s", "agent_message_chunk", dt=5, messageId="m")
    b.state("s", dt=5)
    b.response(rid, {}, dt=5)
    row = _replays(b, tmp_path).row(0, named=True)
    assert (row["history_updates"], row["live_updates"]) == (2, 3)
    assert row["last_history_ms"] == 20.0 and row["marker_ms"] is None
    assert row["last_history_to_response_ms"] == 10.0 and row["marker_to_response_ms"] is None


def test_history_bytes_are_the_recorded_message_lengths(tmp_path: Path) -> None:
    """history_bytes adds the byte lengths of the history messages as they stand in the trace."""
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 2)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    path = b.write(tmp_path / "t.jsonl")
    expected = 0
    for line in path.read_bytes().splitlines():
        if b'"user_message"' in line or b'"agent_message"' in line:
            start = line.index(b'"msg":') + len(b'"msg":')
            expected += len(line[start:-1])
    assert acp_trace.replays(path)["history_bytes"][0] == expected


def test_other_sessions_are_not_counted(tmp_path: Path) -> None:
    """Updates on other sessions inside the window count for nothing."""
    b = TraceBuilder()
    rid = b.resume("s")
    b.update("other", "agent_message", messageId="x")
    b.history("s", 1)
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    assert _replays(b, tmp_path)["history_updates"].to_list() == [2]


def test_children_get_their_own_rows(tmp_path: Path) -> None:
    """An announced child has its own row with parent_session, its own marker and counts."""
    b = TraceBuilder()
    rid = b.resume("p", dt=0)
    b.history("p", 1)
    b.update("p", "subagent_update", sessionId="c")
    b.history("c", 3)
    b.marker("c", dt=10)
    b.marker("p", dt=10)
    b.state("p")
    b.response(rid, {}, dt=100)
    rows = _replays(b, tmp_path).sort("session", descending=True)
    assert rows["session"].to_list() == ["p", "c"]
    assert rows["parent_session"].to_list() == [None, "p"]
    assert rows["outcome"].to_list() == ["complete", "complete"]
    assert rows["history_updates"].to_list() == [3, 6]
    assert rows["marker_to_response_ms"].to_list() == [101.0, 111.0]


def test_unannounced_child_has_no_row(tmp_path: Path) -> None:
    """Updates of a session that was never announced do not make a child row."""
    b = TraceBuilder()
    rid = b.resume("p")
    b.history("c", 1)
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    assert _replays(b, tmp_path)["session"].to_list() == ["p"]


def test_child_without_marker_is_unmarked(tmp_path: Path) -> None:
    """A child announced without its own marker is unmarked when the resume succeeds."""
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c")
    b.history("c", 1)
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    out = _replays(b, tmp_path).sort("session")
    assert out["outcome"].to_list() == ["unmarked", "complete"]


def test_metadata_columns(tmp_path: Path) -> None:
    """Rows carry trace, request id, method, protocol, agent and agent version."""
    b = TraceBuilder(agent="claude-agent-acp", version="0.101.0")
    rid = b.request(
        "session/resume", {"sessionId": "s", "cwd": "/", "replayFrom": {"type": "start"}}, id="r-1"
    )
    b.marker("s")
    b.state("s")
    b.response(rid, {})
    row = _replays(b, tmp_path).row(0, named=True)
    assert row["request_id"] == '"r-1"' and row["method"] == "session/resume"
    assert (row["protocol"], row["agent"], row["agent_version"]) == (
        2,
        "claude-agent-acp",
        "0.101.0",
    )
    assert row["trace"].endswith("t.jsonl")


def test_marker_meta_makes_a_v1_marker(tmp_path: Path) -> None:
    """With --marker-meta, a v1 update carrying the key is the marker and the gap is measured."""
    b = TraceBuilder(protocol=1)
    rid = b.load("s", dt=0)
    b.update("s", "user_message_chunk", dt=5)
    b.update("s", "agent_message_chunk", dt=5, _meta={"vendor.end": True})
    b.response(rid, {}, dt=90)
    plain = _replays(b, tmp_path)
    marked = _replays(b, tmp_path, marker_meta="vendor.end")
    assert plain["marker_ms"].to_list() == [None]
    assert marked["marker_ms"].to_list() == [10.0]
    assert marked["marker_to_response_ms"].to_list() == [90.0]
    assert marked["outcome"].to_list() == ["v1_loaded"]


def test_ordering_only_trace_has_null_timings(tmp_path: Path) -> None:
    """A trace without timestamps still gets outcomes and counts; timings are null."""
    b = _v2(True, _ok)
    b.lines = [b.lines[0]] + [line.replace(b'"t_ns":', b'"t_ns":null,"x":') for line in b.lines[1:]]
    row = _replays(b, tmp_path).row(0, named=True)
    assert row["outcome"] == "complete" and row["history_updates"] == 4
    assert row["response_ms"] is None and row["marker_ms"] is None


def test_child_marked_before_its_announcement_counts_as_marked(tmp_path: Path) -> None:
    """A child whose marker came before its subagent_update is complete, with that marker's
    time, and what it gets after the marker is not counted before the marker."""
    b = TraceBuilder()
    rid = b.resume("p", dt=0)
    b.marker("c", dt=10)  # +10: the child's marker, before the announcement
    b.update("p", "subagent_update", dt=10, sessionId="c")  # +20
    b.history("c", 1, dt=5)  # +25, +30: after the child's marker
    b.marker("p", dt=10)
    b.state("p")
    b.response(rid, {}, dt=10)
    child = _replays(b, tmp_path).filter(pl.col("session") == "c").row(0, named=True)
    assert (child["outcome"], child["marker_ms"], child["first_update_ms"]) == (
        "complete",
        10.0,
        10.0,
    )
    assert (child["history_updates"], child["last_history_ms"]) == (0, None)


def test_grandchildren_are_covered(tmp_path: Path) -> None:
    """A child announced on a covered child has its own row, with that child as its parent."""
    b = TraceBuilder()
    rid = b.resume("p")
    b.update("p", "subagent_update", sessionId="c1")
    b.update("c1", "subagent_update", sessionId="c2")
    b.history("c2", 2)
    b.marker("c2")
    b.marker("c1")
    b.marker("p")
    b.state("p")
    b.response(rid, {})
    rows = _replays(b, tmp_path).sort("session")
    assert rows.select("session", "parent_session", "outcome", "history_updates").rows() == [
        ("c1", "p", "complete", 1),
        ("c2", "c1", "complete", 4),
        ("p", None, "complete", 1),
    ]


@pytest.mark.parametrize("holder", ["params", "update"])
def test_marker_meta_on_a_history_kind_is_a_marker_not_history(tmp_path: Path, holder: str) -> None:
    """A v1 update carrying the --marker-meta key (in params._meta or params.update._meta) is
    the marker even on a history kind: not counted as history, its time is marker_ms."""
    b = TraceBuilder(protocol=1)
    rid = b.load("s", dt=0)
    b.update("s", "user_message_chunk", dt=5)
    meta = {"vendor.end": True}
    update = {
        "sessionUpdate": "agent_message_chunk",
        **({"_meta": meta} if holder == "update" else {}),
    }
    params: dict = {"sessionId": "s", "update": update}
    if holder == "params":
        params["_meta"] = meta
    b.notify("session/update", params, dt=5)
    b.response(rid, {}, dt=90)
    row = _replays(b, tmp_path, marker_meta="vendor.end").row(0, named=True)
    assert (row["outcome"], row["marker_ms"], row["history_updates"]) == ("v1_loaded", 10.0, 1)
    assert row["last_history_ms"] == 5.0


def test_marker_meta_does_not_mark_v2(tmp_path: Path) -> None:
    """On a v2 connection the --marker-meta event marks nothing (replay_complete does), and is
    neither history nor live: it is the vendor event, its time `vendor_marker_ms`."""
    b = TraceBuilder()
    rid = b.resume("s", dt=0)
    b.update("s", "user_message", dt=5, messageId="m", _meta={"vendor.end": True})
    b.marker("s", dt=5)
    b.state("s")
    b.response(rid, {})
    row = _replays(b, tmp_path, marker_meta="vendor.end").row(0, named=True)
    assert (row["outcome"], row["marker_ms"], row["history_updates"]) == ("complete", 10.0, 0)
    assert (row["vendor_marker_ms"], row["gap_source"], row["gap_ms"]) == (5.0, "marker", 2.0)


def test_marker_meta_rules_apply_to_v1_loads(tmp_path: Path) -> None:
    """With --marker-meta the marker rules judge a v1 load as a v2 resume with a cursor: a
    vendor marker after the response is late (and the load unmarked), a second is a duplicate."""
    meta = {"vendor.end": True}
    late = TraceBuilder(protocol=1)
    rid = late.load("s")
    late.update("s", "user_message_chunk")
    late.response(rid, {})
    late.update("s", "agent_message_chunk", _meta=meta)
    twice = TraceBuilder(protocol=1)
    rid = twice.load("s")
    twice.update("s", "agent_message_chunk", _meta=meta)
    twice.update("s", "agent_message_chunk", _meta=meta)
    twice.response(rid, {})
    found = {}
    for name, b in (("late", late), ("twice", twice)):
        path = b.write(tmp_path / f"{name}.jsonl")
        found[name] = set(acp_trace.check(path, marker_meta="vendor.end", schema=False)["rule"])
    assert found == {"late": {"marker-missing", "marker-late"}, "twice": {"marker-duplicate"}}


# ------------------------------------------------ gemini-cli: history after a v1 load's response


def _late(b: TraceBuilder, session: str, n: int) -> None:
    """`n` history updates as gemini-cli sends the rest of a load's history after its
    response (one turn's question and answer each pair)."""
    for i in range(n):
        kind = "user_message_chunk" if i % 2 == 0 else "agent_message_chunk"
        b.update(session, kind, content={"type": "text", "text": f"{kind} {i}"})


def _two_loads(b: TraceBuilder) -> None:
    """Load 1 answers after one update; 2 late updates, load 2 (at +5 ms), 3 more of load 1's
    late updates and load 2's first inside its window, its response, 2 late."""
    r1 = b.load("s")
    _late(b, "s", 1)
    b.response(r1, {})
    _late(b, "s", 2)
    r2 = b.load("s")
    _late(b, "s", 4)
    b.response(r2, {})
    _late(b, "s", 2)


def _second_session(b: TraceBuilder) -> None:
    """Load of s; its late updates go on across a load of t: none are t's."""
    r1 = b.load("s")
    _late(b, "s", 1)
    b.response(r1, {})
    _late(b, "s", 1)
    r2 = b.load("t")
    _late(b, "s", 2)
    _late(b, "t", 1)
    b.response(r2, {})
    _late(b, "s", 1)
    _late(b, "t", 1)


def _resume_after_load(b: TraceBuilder) -> None:
    """Load of s, then a resume of s with a cursor while the load's late updates go on."""
    r1 = b.load("s")
    _late(b, "s", 1)
    b.response(r1, {})
    _late(b, "s", 1)
    r2 = b.resume("s")
    _late(b, "s", 2)
    b.marker("s")
    b.state("s")
    b.response(r2, {})


def _load_before_response(b: TraceBuilder) -> None:
    """Load 2 sent before load 1's response (concurrent-replay): what comes after load 1's
    response is after it until a further request for s, which never comes."""
    r1 = b.load("s")
    r2 = b.load("s")
    _late(b, "s", 1)
    b.response(r1, {})
    _late(b, "s", 3)
    b.response(r2, {})
    _late(b, "s", 1)


def _failed_load_between(b: TraceBuilder) -> None:
    """A load answered with an error between two loads: it closes the first's late updates
    (a further request for s) and has none of its own."""
    r1 = b.load("s")
    _late(b, "s", 1)
    b.response(r1, {})
    _late(b, "s", 1)
    r2 = b.load("s")
    _late(b, "s", 1)
    b.error(r2, -32603)
    _late(b, "s", 1)


@pytest.mark.parametrize(
    ("build", "protocol", "rows", "after_response"),
    [
        # request id: (first_update_ms, history_updates, last_history_ms, response_ms); the
        # window of a load is its request to its response (rules.md): load 1's late updates
        # sent before load 2's request are not load 2's, those after it are in its window
        (_two_loads, 1, {2: (1, 1, 1, 2), 3: (1, 4, 4, 5)}, {2: 2, 3: 2}),
        (_second_session, 1, {2: (1, 1, 1, 2), 3: (3, 1, 3, 4)}, {2: 4, 3: 1}),
        (_resume_after_load, 2, {2: (1, 1, 1, 2), 3: (1, 2, 2, 5)}, {2: 1}),
        (_load_before_response, 1, {2: (2, 1, 2, 3), 3: (1, 4, 5, 6)}, {2: 4, 3: 1}),
        (_failed_load_between, 1, {2: (1, 1, 1, 2), 3: (1, 1, 1, 2)}, {2: 1}),
    ],
)
def test_late_load_updates_stay_where_rules_put_them(
    tmp_path: Path,
    build: Callable[[TraceBuilder], None],
    protocol: int | None,
    rows: dict[int, tuple[float, int, float, float]],
    after_response: dict[int, int],
) -> None:
    """gemini-cli's load answers after its first update and sends the rest later; with a
    second load, a load of another session or a resume following it, each replay row counts
    and times only its own window, and each load's history after its response is counted for
    it until the client's next request for its session (none dropped)."""
    b = TraceBuilder(protocol=protocol, agent="gemini-cli")
    build(b)
    a = acp_trace.analyze(b.write(tmp_path / "t.jsonl"))
    cols = ("request_id", "first_update_ms", "history_updates", "last_history_ms", "response_ms")
    got = {int(rid): tuple(rest) for rid, *rest in a.replays.select(cols).iter_rows()}
    assert got == rows
    late = {int(a.facts.windows[i].request_id or 0): len(r) for i, r in a.facts.load_after}
    assert late == after_response
    found = a.findings().filter(pl.col("rule") == "load-updates-after-response")
    assert found.height == len(after_response)
