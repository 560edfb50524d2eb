"""Replay fidelity on built traces: each field and rule of rules.md "Replay fidelity"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import acp_trace
from acp_trace.fidelity.match import longest_increasing
from tracebuilder import TraceBuilder

S = "sess-1"


def _text(t: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t}]


def live(b: TraceBuilder, turns: int, *, new: bool = True, tool: bool = False) -> None:
    """session/new (when `new`) and `turns` v2 prompt turns: user_message u{i}, agent a{i}."""
    if new:
        rid = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
        b.response(rid, {"sessionId": S})
    for i in range(turns):
        rid = b.request("session/prompt", {"sessionId": S, "prompt": _text(f"question {i}")})
        b.response(rid, {"messageId": f"u{i}"})
        b.update(S, "user_message", messageId=f"u{i}", content=_text(f"question {i}"))
        b.update(S, "agent_message", messageId=f"a{i}", content=[])
        b.update(S, "agent_message_chunk", messageId=f"a{i}", content=_text(f"answer {i} "))
        b.update(S, "agent_message_chunk", messageId=f"a{i}", content=_text("done"))
        if tool:
            b.update(S, "tool_call", toolCallId=f"t{i}", status="pending", title="run")
            b.update(
                S,
                "tool_call_update",
                toolCallId=f"t{i}",
                status="completed",
                content=[{"type": "content", "content": {"type": "text", "text": "x" * 50}}],
            )
        b.state(S, "idle")


def replay_all(
    b: TraceBuilder,
    turns: int,
    *,
    ids: str = "",
    tool: bool = False,
    skip: tuple[int, ...] = (),
    order: list[int] | None = None,
) -> None:
    """A marked v2 replay of the turns `live` made (ids suffixed with `ids`)."""
    rid = b.resume(S)
    for i in order if order is not None else range(turns):
        if i in skip:
            continue
        b.update(S, "user_message", messageId=f"u{i}{ids}", content=_text(f"question {i}"))
        b.update(S, "agent_message", messageId=f"a{i}{ids}", content=_text(f"answer {i} done"))
        if tool:
            b.update(
                S,
                "tool_call",
                toolCallId=f"t{i}",
                status="completed",
                content=[{"type": "content", "content": {"type": "text", "text": "x" * 50}}],
            )
    b.marker(S)
    b.state(S, "idle")
    b.response(rid, {})


def stdlib_update(b: TraceBuilder, update: dict[str, Any]) -> None:
    """An update written by the stdlib: integers beyond 64 bits and lone surrogates as JSON
    allows them (orjson writes neither)."""
    b.seq += 1
    b.t_ns += 1_000_000
    msg = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": S, "update": update},
    }
    line = {"seq": b.seq, "t_ns": b.t_ns, "src": "agent", "msg": msg}
    b.lines.append(json.dumps(line).encode())


def analyze(tmp_path: Path, *builders: TraceBuilder) -> acp_trace.Analysis:
    paths = [b.write(tmp_path / f"t{i}.jsonl") for i, b in enumerate(builders)]
    return acp_trace.analyze(paths)


def row(a: acp_trace.Analysis, n: int = -1) -> dict[str, Any]:
    return a.replays.to_dicts()[n]


def rules(a: acp_trace.Analysis) -> dict[str, str]:
    f = a.findings(schema=False)
    return {r: m for r, m in f.select("rule", "message").iter_rows() if r.startswith("replay-")}


def test_a_faithful_replay_has_no_difference(tmp_path: Path) -> None:
    """A replay that carries every message of the live turns, under their ids, is clean."""
    b = TraceBuilder()
    live(b, 3, tool=True)
    replay_all(b, 3, tool=True)
    a = analyze(tmp_path, b)
    r = row(a)
    assert (r["source"], r["source_complete"], r["source_messages"]) == ("live", True, 9)
    for name in (
        "replay_missing",
        "replay_extra",
        "replay_duplicated",
        "replay_id_changed",
        "replay_reordered",
        "replay_truncated",
        "replay_truncated_bytes",
    ):
        assert r[name] == 0, name
    assert rules(a) == {}


def test_new_ids_on_replay(tmp_path: Path) -> None:
    """Messages matched by content under new ids: id_changed; the prompt's user message under
    another id is replay-prompt-id-changed (ACP-RESUME-204), the agent's replay-id-unstable."""
    b = TraceBuilder()
    live(b, 2)
    replay_all(b, 2, ids="-new")
    a = analyze(tmp_path, b)
    r = row(a)
    assert r["replay_id_changed"] == 4 and r["replay_missing"] == 0 and r["replay_extra"] == 0
    found = rules(a)
    assert set(found) == {"replay-prompt-id-changed", "replay-id-unstable"}
    assert "2 user messages" in found["replay-prompt-id-changed"]
    assert "2 messages replayed under another id" in found["replay-id-unstable"]
    assert '"a0" at seq' in found["replay-id-unstable"]  # the source side of the first example
    f = a.findings(schema=False)
    assert f.filter(f["rule"] == "replay-prompt-id-changed")["severity"].to_list() == ["error"]


def test_missing_and_extra(tmp_path: Path) -> None:
    """A replay that leaves a turn out and adds a message: missing (info) and extra (info)."""
    b = TraceBuilder()
    live(b, 3)
    rid = b.resume(S)
    for i in (0, 2):
        b.update(S, "user_message", messageId=f"u{i}", content=_text(f"question {i}"))
        b.update(S, "agent_message", messageId=f"a{i}", content=_text(f"answer {i} done"))
    b.update(S, "agent_message", messageId="zz", content=_text("never said"))
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    r = row(a)
    assert (r["replay_missing"], r["replay_extra"]) == (2, 1)
    found = rules(a)
    assert set(found) == {"replay-missing-messages", "replay-extra-messages"}
    assert "question 1" in found["replay-missing-messages"]
    assert "never said" in found["replay-extra-messages"]


def test_extra_needs_a_complete_source(tmp_path: Path) -> None:
    """Without the session's session/new in the traces, a message the source lacks may be
    history from before the recording: replay_extra is null and no finding is made."""
    b = TraceBuilder()
    live(b, 1, new=False)
    rid = b.resume(S)
    b.update(S, "agent_message", messageId="old", content=_text("from before"))
    b.update(S, "user_message", messageId="u0", content=_text("question 0"))
    b.update(S, "agent_message", messageId="a0", content=_text("answer 0 done"))
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    r = row(a)
    assert (r["source"], r["source_complete"], r["replay_extra"]) == ("live", False, None)
    assert "replay-extra-messages" not in rules(a)


def test_no_source(tmp_path: Path) -> None:
    """A replay of a session the traces never saw has no source: comparison fields null, and
    the single-window counts still counted."""
    b = TraceBuilder()
    rid = b.resume(S)
    b.update(S, "agent_message", messageId="m", content=_text("a"))
    b.update(S, "agent_message", messageId="m", content=_text("a"))
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    r = row(a)
    assert r["source"] is None and r["source_messages"] is None and r["replay_missing"] is None
    assert r["replay_duplicated"] == 1
    assert set(rules(a)) == {"replay-duplicate-message"}


def test_duplicates_and_chunks_before_their_message(tmp_path: Path) -> None:
    """A whole update repeated is one message counted as a duplicate; a chunk whose whole
    update never comes, or comes later, is replay-chunk-before-message (ACP-RESUME-205); a
    chunk after its whole update is fine."""
    b = TraceBuilder()
    rid = b.resume(S)
    b.update(S, "agent_message", messageId="ok", content=[])
    b.update(S, "agent_message_chunk", messageId="ok", content={"type": "text", "text": "x"})
    b.update(S, "agent_message_chunk", messageId="early", content={"type": "text", "text": "y"})
    b.update(S, "agent_message", messageId="early", content=[])
    b.update(S, "agent_thought_chunk", messageId="never", content={"type": "text", "text": "z"})
    b.update(S, "tool_call", toolCallId="t", status="pending")
    b.update(S, "tool_call", toolCallId="t", status="pending")
    b.update(S, "agent_message", messageId="ok", content=[])
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    assert row(a)["replay_duplicated"] == 2
    found = rules(a)
    assert "2 chunks before the whole-message update" in found["replay-chunk-before-message"]
    assert '"early"' in found["replay-chunk-before-message"]


def test_chunk_order_is_no_rule_in_v1(tmp_path: Path) -> None:
    """v1 has no whole-message updates: chunks alone are no finding."""
    b = TraceBuilder(protocol=1)
    rid = b.load(S)
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "y"})
    b.response(rid, {})
    assert rules(analyze(tmp_path, b)) == {}


def test_reordered(tmp_path: Path) -> None:
    """Matched messages outside the longest run in source order are reordered."""
    b = TraceBuilder()
    live(b, 4)
    replay_all(b, 4, order=[0, 2, 1, 3])
    a = analyze(tmp_path, b)
    assert row(a)["replay_reordered"] == 2
    assert "2 messages out of its source's order" in rules(a)["replay-reordered"]


def test_truncated_tool_output(tmp_path: Path) -> None:
    """A tool call replayed with less output than it had: truncated, with the bytes lost."""
    b = TraceBuilder()
    live(b, 1, tool=True)
    rid = b.resume(S)
    b.update(S, "user_message", messageId="u0", content=_text("question 0"))
    b.update(S, "agent_message", messageId="a0", content=_text("answer 0 done"))
    b.update(
        S,
        "tool_call",
        toolCallId="t0",
        status="completed",
        content=[{"type": "content", "content": {"type": "text", "text": "x" * 20}}],
    )
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    r = row(a)
    assert (r["replay_truncated"], r["replay_truncated_bytes"]) == (1, 30)
    assert "29 bytes of 59" in rules(a)["replay-truncated-content"]


def test_source_across_recordings_in_recording_order(tmp_path: Path) -> None:
    """The source is looked for over every trace given, in the order the recordings started:
    the live session in one recording, its v1 load in a later one."""
    first = TraceBuilder(protocol=1)
    rid = first.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    first.response(rid, {"sessionId": S})
    rid = first.request("session/prompt", {"sessionId": S, "prompt": _text("hello")})
    first.update(S, "agent_message_chunk", content={"type": "text", "text": "hi "})
    first.update(S, "agent_message_chunk", content={"type": "text", "text": "there"})
    first.response(rid, {"stopReason": "end_turn"})
    later = TraceBuilder(protocol=1)
    later.lines[0] = later.lines[0].replace(b"2026-11-30T10:00", b"2026-11-30T11:00")
    rid = later.load(S)
    later.update(S, "user_message_chunk", content={"type": "text", "text": "hello"})
    later.update(S, "agent_message_chunk", content={"type": "text", "text": "hi there"})
    later.response(rid, {})
    # the later recording first on the command line and by name: order comes from started_at
    paths = [later.write(tmp_path / "a.jsonl"), first.write(tmp_path / "b.jsonl")]
    r = acp_trace.analyze(paths).replays.to_dicts()[0]
    assert (r["source"], r["source_complete"], r["source_messages"]) == ("live", True, 2)
    assert (r["replay_missing"], r["replay_extra"], r["replay_truncated"]) == (0, 0, 0)


def test_an_earlier_replay_is_the_source(tmp_path: Path) -> None:
    """With an earlier successful replay and no turn after it, that replay is the source."""
    b = TraceBuilder()
    replay_all(b, 2)
    replay_all(b, 2, skip=(1,))
    a = analyze(tmp_path, b)
    r = row(a)
    assert (r["source"], r["source_complete"], r["source_messages"]) == ("replay", False, 4)
    assert r["replay_missing"] == 2


def test_v1_runs_end_at_any_other_agent_record(tmp_path: Path) -> None:
    """A v1 message is a run of chunks of one kind: another kind, another session's update or
    a response ends it; a client line does not."""
    b = TraceBuilder(protocol=1)
    rid = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(rid, {"sessionId": S})
    rid = b.request("session/prompt", {"sessionId": S, "prompt": _text("q")})
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "a"})
    b.request("session/cancel", {"sessionId": "other"})  # a client line: the run goes on
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "b"})
    b.update("other", "agent_message_chunk", content={"type": "text", "text": "-"})
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "c"})
    b.response(rid, {"stopReason": "end_turn"})
    rid = b.load(S)
    b.update(S, "user_message_chunk", content={"type": "text", "text": "q"})
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "ab"})
    b.update(S, "agent_message_chunk", content={"type": "text", "text": "c"})
    b.response(rid, {})
    r = row(analyze(tmp_path, b))
    # source: the prompt "q", "ab", "c"; the replay's "ab"+"c" is one run: "abc"
    assert r["source_messages"] == 3
    assert (r["replay_missing"], r["replay_extra"]) == (2, 1)


@pytest.mark.parametrize(
    "update",
    [
        {"sessionUpdate": "agent_message", "messageId": {"an": "object"}, "content": "text"},
        {"sessionUpdate": "agent_message_chunk", "content": None},
        {"sessionUpdate": "tool_call_update", "toolCallId": "unknown", "content": 5},
        {"sessionUpdate": "agent_message", "messageId": 18446744073709551617, "content": []},
        {"sessionUpdate": "agent_message", "messageId": 18446744073709551616, "content": []},
        {
            "sessionUpdate": "user_message",
            "messageId": "x",
            "content": [1, None, {"type": "image"}],
        },
        {"sessionUpdate": "agent_message", "messageId": "\ud800", "content": _text("\u202e")},
    ],
)
def test_hostile_updates_are_counted_never_a_crash(tmp_path: Path, update: dict[str, Any]) -> None:
    """Ids of the wrong type, chunks without ids, tool call updates for unknown ids, ids beyond
    64 bits and hostile text: a count or a finding, never a crash."""
    b = TraceBuilder()
    live(b, 1)
    rid = b.resume(S)
    stdlib_update(b, update)
    b.marker(S)
    b.response(rid, {})
    a = analyze(tmp_path, b)
    assert row(a)["source_messages"] == 2
    a.findings(schema=False)


def test_ids_beyond_64_bits_stay_distinct(tmp_path: Path) -> None:
    """Two messageIds that differ only beyond 64 bits are two messages, not one duplicate."""
    b = TraceBuilder()
    rid = b.resume(S)
    for big in (18446744073709551617, 18446744073709551616):
        stdlib_update(b, {"sessionUpdate": "agent_message", "messageId": big, "content": []})
    b.marker(S)
    b.response(rid, {})
    assert row(analyze(tmp_path, b))["replay_duplicated"] == 0


def test_longest_increasing_run() -> None:
    """The longest run in order, found in n log n: what is outside it was reordered."""
    assert longest_increasing([0, 2, 1, 3]) in ({0, 1, 3}, {0, 2, 3})
    assert longest_increasing([]) == set()
    assert longest_increasing([3, 2, 1]) in ({3}, {2}, {1})
    assert len(longest_increasing(list(range(1000)))) == 1000


def test_a_new_replay_against_a_recorded_one(tmp_path: Path) -> None:
    """`against`: the recorded replay is the whole source of the new one (drive): what the new
    one lost, renamed or cut is counted; what it adds is not (the source is not complete)."""
    from acp_trace.analysis.replay_fidelity import replay_spans
    from acp_trace.fidelity import against

    recorded, new = TraceBuilder(), TraceBuilder()
    replay_all(recorded, 10)
    replay_all(new, 1, ids="-x")
    a, b = acp_trace.analyze(recorded.write(tmp_path / "a.jsonl")), analyze(tmp_path, new)
    f = against(a.timeline, replay_spans(a)[0], b.timeline, replay_spans(b)[0])
    assert (f.source_messages, f.replay_messages) == (20, 2)
    assert (f.replay_missing, f.replay_id_changed, f.replay_extra) == (18, 2, None)


def test_per_trace_sources_look_in_the_replays_own_trace(tmp_path: Path) -> None:
    """With per_trace_sources (the dataset's rows, one trace each), a source in another trace
    is not looked for: the row depends on its own trace alone."""
    from acp_trace.analysis.front import Analysis
    from acp_trace.trace.reader import read_trace

    first, later = TraceBuilder(), TraceBuilder()
    live(first, 2)
    later.lines[0] = later.lines[0].replace(b"2026-11-30T10:00", b"2026-11-30T11:00")
    replay_all(later, 2)
    records = read_trace([first.write(tmp_path / "a.jsonl"), later.write(tmp_path / "b.jsonl")])
    assert Analysis(records).replays["source"].to_list() == ["live"]
    assert Analysis(records, per_trace_sources=True).replays["source"].to_list() == [None]


def test_the_fleet_finds_a_source_in_another_partition(tmp_path: Path) -> None:
    """Partitions analyzed apart still see a source in another partition: the fleet's tables
    equal one process's."""
    from acp_trace import fleet

    first, later = TraceBuilder(), TraceBuilder()
    live(first, 2)
    later.lines[0] = later.lines[0].replace(b"2026-11-30T10:00", b"2026-11-30T11:00")
    replay_all(later, 2, ids="-new")
    paths = [first.write(tmp_path / "a.jsonl"), later.write(tmp_path / "b.jsonl")]
    result = fleet.run(paths, workers=2, partitions=2)
    one = acp_trace.analyze(paths)
    assert result.replays.equals(one.replays)
    assert result.replays["replay_id_changed"].to_list() == [4]
    assert result.all_findings.equals(one.findings())


def test_another_agents_session_of_the_same_id_is_no_source(tmp_path: Path) -> None:
    """A session is its agent's: a recording of another agent that uses the same session id
    (fabricated ids, fixtures) is not its history."""
    first, later = TraceBuilder(agent="agent-a"), TraceBuilder(agent="agent-b")
    live(first, 2)
    later.lines[0] = later.lines[0].replace(b"2026-11-30T10:00", b"2026-11-30T11:00")
    replay_all(later, 2)
    paths = [first.write(tmp_path / "a.jsonl"), later.write(tmp_path / "b.jsonl")]
    assert acp_trace.analyze(paths).replays["source"].to_list() == [None]


@pytest.mark.slow
def test_a_hundred_thousand_messages_in_one_replay(tmp_path: Path) -> None:
    """100,000 messages in one replay, set against a replay of the same 100,000 under new ids:
    counted, not a crash (matching is by id, then by text through a dictionary: linear)."""
    b = TraceBuilder()
    for suffix in ("", "-x"):
        rid = b.resume(S)
        for i in range(100_000):
            b.update(
                S, "agent_message", dt=0.001, messageId=f"m{i}{suffix}", content=_text(f"t{i}")
            )
        b.marker(S)
        b.response(rid, {})
    r = row(analyze(tmp_path, b))
    assert (r["source_messages"], r["replay_id_changed"], r["replay_missing"]) == (
        100_000,
        100_000,
        0,
    )
