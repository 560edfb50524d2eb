"""The answers in process (acp_trace.mcpserver.server.build, no subprocess): explain_replay on
replays of each kind of ending, and the outcome vocabulary of the tools."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import anyio
import orjson

from acp_trace.mcpserver import explain, server
from acp_trace.mcpserver.store import Store
from tracebuilder import TraceBuilder


def call(paths: list[str], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call on a server built in this process; the answer's JSON (or the error)."""
    built = server.build(Store(paths))

    async def main() -> Any:
        return await built.call_tool(name, args)

    result = anyio.run(main)
    text = result.content[0].text
    return {"error": text} if result.is_error else dict(orjson.loads(text))


def test_the_outcome_filter_names_every_outcome_explained() -> None:
    """The `outcome` argument's choices are the outcomes explain_replay has a reason for."""
    assert set(typing.get_args(server.Outcome)) == set(explain.OUTCOMES)


def test_an_open_replay_is_explained(tmp_path: Path) -> None:
    """A resume still pending when the trace ends: outcome open, no time to the response,
    the steps it got to."""
    b = TraceBuilder()
    b.resume("s1")
    b.history("s1", 3)
    trace = b.write(tmp_path / "open.jsonl")
    why = call([str(trace)], "explain_replay", {})
    assert why["outcome"] == "open" and "no response was recorded" in why["why"]
    assert why["time"].startswith("no response was recorded")
    assert why["end"]["how"] == "open" and why["slowest_part"] is None
    steps = [s["what"] for s in why["sessions"][0]["steps"]]
    assert steps[0] == "first update" and steps[1].startswith("last history update (6 in all")
    assert len(steps) == 2


def test_a_rejected_replay_is_explained(tmp_path: Path) -> None:
    """A resume answered -32602: outcome rejected, the error code in `end`."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.error(rid, -32602)
    trace = b.write(tmp_path / "rejected.jsonl")
    why = call([str(trace)], "explain_replay", {"session": "s1", "request": str(rid)})
    assert why["outcome"] == "rejected" and "refused" in why["why"]
    assert why["end"]["how"] == "error" and why["end"]["error_code"] == -32602


def test_a_trace_without_replays_says_so(tmp_path: Path) -> None:
    """explain_replay on traces with no replaying request is a tool error saying so."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/"})
    trace = b.write(tmp_path / "new.jsonl")
    out = call([str(trace)], "explain_replay", {})
    assert out["error"] == (
        "acp-trace: no replaying session/resume or session/load in these traces"
    )


AIR_V1 = "claude-agent-acp-v1-load-air.jsonl"
VENDOR = "vendor event jetbrains.air.loadReplayEnd"


def test_the_vendor_end_of_replay_event_is_never_called_a_marker() -> None:
    """A v1 load ended by claude-agent-acp's vendor event: explain_replay names it `vendor event
    jetbrains.air.loadReplayEnd` in its steps and its time, says no sentence about it with the
    word marker, and summary's gap note names the vendor event beside the marker."""
    from testpaths import SAMPLES

    why = call([str(SAMPLES / AIR_V1)], "explain_replay", {"trace": AIR_V1})
    steps = [s["what"] for s in why["sessions"][0]["steps"]]
    assert VENDOR in steps and not any("marker" in step for step in steps)
    assert f"the {VENDOR} at 3,300 ms, then a gap of 7,346 ms" in why["time"]
    assert "marker" not in why["time"]
    assert "vendor end-of-replay event" in why["why"]  # what ends a v1 load's history
    summary = call([str(SAMPLES / AIR_V1)], "summary", {})
    assert "vendor end-of-replay event (vendor:PATH, named vendor event PATH)" in summary["gap"]


def test_explain_replay_says_whether_the_replay_is_the_session(tmp_path: Path) -> None:
    """explain_replay answers "is the replay the session?": against an earlier replay, the
    counts and the first differences; with nothing to compare, why not."""
    b = TraceBuilder()
    ids = []
    for suffix in ("", "-again"):
        rid = b.resume("s1")
        ids.append(rid)
        for i in range(2):
            text = [{"type": "text", "text": f"m{i}"}]
            b.update("s1", "agent_message", messageId=f"m{i}{suffix}", content=text)
        b.marker("s1")
        b.response(rid, {})
    trace = b.write(tmp_path / "twice.jsonl")
    second = call([str(trace)], "explain_replay", {"session": "s1", "request": str(ids[1])})
    said = second["is_the_replay_the_session"]
    assert said["answer"] == "no: 2 id changed" and said["id_changed"] == 2
    assert said["source"].startswith("the earlier replay at ") and said["source_messages"] == 2
    first = said["first_differences"][0]
    assert (first["what"], first["source_id"], first["replay_id"]) == (
        "id_changed",
        "m0",
        "m0-again",
    )
    alone = call([str(trace)], "explain_replay", {"session": "s1", "request": str(ids[0])})
    assert alone["is_the_replay_the_session"]["answer"].startswith("not compared")
