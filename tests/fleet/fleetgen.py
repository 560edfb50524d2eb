"""Many small traces of varied shapes, for the fleet tests."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from tracebuilder import TraceBuilder


def varied_trace(rng: random.Random, index: int) -> TraceBuilder:
    """One small trace: a replay (marked or not, children, errors), maybe a prompt turn."""
    agent = rng.choice(["agent-a", "agent-b", "agent-c"])
    b = TraceBuilder(
        protocol=rng.choice([1, 2, 2]), agent=agent, version=rng.choice(["1.0", "1.1"])
    )
    session = f"s{index}"
    if rng.random() < 0.5:
        rid = b.resume(session, dt=rng.uniform(0.1, 3))
    else:
        rid = b.load(session, dt=rng.uniform(0.1, 3))
    b.history(session, rng.randint(0, 4), dt=rng.uniform(0.05, 1))
    if rng.random() < 0.3:
        b.update(session, "subagent_update", sessionId=f"{session}-c")
        b.history(f"{session}-c", 1)
        b.marker(f"{session}-c")
    if rng.random() < 0.7:
        b.marker(session)
    b.state(session)
    if rng.random() < 0.15:
        b.error(rid, rng.choice([-32602, -32002, -32603]), dt=rng.uniform(1, 50))
    else:
        b.response(rid, dt=rng.uniform(1, 900))
    if rng.random() < 0.5:
        p = b.request("session/prompt", {"sessionId": session, "prompt": []})
        b.update(session, "agent_message_chunk", messageId="m", dt=rng.uniform(1, 30))
        b.response(p, {"stopReason": "end_turn"}, dt=rng.uniform(1, 30))
    if rng.random() < 0.1:
        b.text("agent", "debug: not json")
    return b


def write_traces(
    folder: Path,
    count: int,
    seed: int = 7,
    *,
    distinct: bool = False,
    agents: list[str] | None = None,
) -> Path:
    """`count` varied traces in `folder`, in three subfolders. With `distinct` each has a
    header of its own (pid, start time over a few days), so each is its own recording to the
    dataset (the same header is the same recording: docs/dataset.md); `agents`: the names to
    draw from instead of agent-a/b/c."""
    rng = random.Random(seed)
    for i in range(count):
        sub = folder / f"batch{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        b = varied_trace(rng, i)
        if agents:
            b = _renamed(b, rng.choice(agents))
        if distinct:
            head = orjson.loads(b.lines[0])
            when = datetime(2026, 11, 28, tzinfo=UTC) + timedelta(minutes=37 * i)
            head |= {"pid": 1000 + i, "started_at": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
            b.lines[0] = orjson.dumps(head)
        b.write(sub / f"t{i:05d}.jsonl")
    return folder


def _renamed(b: TraceBuilder, agent: str) -> TraceBuilder:
    """The trace with its agent's name in initialize replaced."""
    for n, line in enumerate(b.lines):
        msg = orjson.loads(line)
        info = (msg.get("msg") or {}).get("result") or {}
        for key in ("info", "agentInfo"):
            if isinstance(info, dict) and isinstance(info.get(key), dict):
                info[key]["name"] = agent
                b.lines[n] = orjson.dumps(msg)
    return b
