"""Many small traces of varied shapes, for the fleet tests."""

from __future__ import annotations

import random
from pathlib import Path

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


def write_traces(folder: Path, count: int, seed: int = 7) -> Path:
    """`count` varied traces in `folder`, in three subfolders."""
    rng = random.Random(seed)
    for i in range(count):
        sub = folder / f"batch{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        varied_trace(rng, i).write(sub / f"t{i:05d}.jsonl")
    return folder
