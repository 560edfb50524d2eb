"""The demo agent's sessions: fabricated histories and the correct window of a resume or load.

A window (demo/faults.py) is what the agent sends for one request: the replay (session
updates on the session or on a child, agent requests), the tail (the state snapshot), the
response. `faults.bend` then makes it break the rules the agent was asked to break.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acp_trace.demo.faults import bend, parse_faults
from acp_trace.demo.window import LOAD, REPLAY, RESUME, Action, Step, Update, Window, marker
from acp_trace.demo.window import parse_gap as parse_gap

__all__ = ["Session", "Step", "fabricate", "marker", "parse_gap", "replay_plan"]


@dataclass
class Session:
    """A session the demo agent knows: its turns (user text, agent text) and its children."""

    sid: str
    turns: list[tuple[str, str]]
    children: list[str] = field(default_factory=list)
    active: bool = False


def fabricate(sid: str, turns: int, children: int = 0) -> list[Session]:
    """A session with `turns` fabricated turns and `children` child sessions (parent first)."""
    parent = Session(sid, [_turn(i) for i in range(turns)])
    kids = [Session(f"{sid}-child{j}", [_turn(i) for i in range(turns)]) for j in range(children)]
    parent.children = [k.sid for k in kids]
    return [parent, *kids]


def words(text: str) -> list[str]:
    """`text` in the chunks a live turn streams: each word with the spaces after it, so that
    their concatenation is `text` exactly (a replay sends it whole)."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _turn(i: int) -> tuple[str, str]:
    return (f"question {i}: what is {i}+{i}?", f"answer {i}: {i + i}")


def message_updates(sid: str, index: int, turn: tuple[str, str], protocol: int) -> list[Update]:
    """The two replayed updates of one turn: v1 chunks, or v2 messages with stable ids."""
    user, agent = turn
    if protocol < 2:
        return [
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": user}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": agent}},
        ]
    return [
        {
            "sessionUpdate": kind,
            "messageId": f"{sid}-{tag}{index}",
            "content": [{"type": "text", "text": text}],
        }
        for kind, tag, text in (("user_message", "u", user), ("agent_message", "a", agent))
    ]


def history_steps(session: Session, protocol: int) -> list[Action]:
    """The session's turns as replay steps (no children, no marker)."""
    return [
        Step(session.sid, update)
        for i, turn in enumerate(session.turns)
        for update in message_updates(session.sid, i, turn, protocol)
    ]


def state(sid: str, value: str, **extra: Any) -> Step:
    """A state_update snapshot on `sid`."""
    return Step(sid, {"sessionUpdate": "state_update", "state": value, **extra})


def replay_window(sessions: dict[str, Session], sid: str, protocol: int) -> Window:
    """The correct window of a replaying resume (v2: history, children, marker, snapshot) or of
    a v1 load (the history)."""
    session = sessions[sid]
    steps = history_steps(session, protocol)
    if protocol < 2:
        return Window(sid, LOAD, steps)
    kids = session.children
    for j in reversed(range(len(kids))):  # from the end, so earlier positions stay valid
        at = 2 * ((j + 1) * len(session.turns) // (len(kids) + 1))
        steps[at:at] = _child_block(sessions[kids[j]], sid)
    steps.append(marker(sid))
    return Window(sid, REPLAY, steps, [state(sid, "idle")])


def resume_window(session: Session, protocol: int, faults: frozenset[str]) -> Window:
    """A resume without replay: only the v2 snapshot, unless a fault replays the history
    (`replay-without-cursor`) or sends a marker (`marker-unexpected`)."""
    steps = history_steps(session, protocol) if "replay-without-cursor" in faults else []
    if protocol >= 2 and "marker-unexpected" in faults:
        steps.append(marker(session.sid))
    tail: list[Action] = [state(session.sid, "idle")] if protocol >= 2 else []
    return Window(session.sid, RESUME, steps, tail)


def replay_plan(
    sessions: dict[str, Session], sid: str, protocol: int, faults: Iterable[str] = ()
) -> list[Step]:
    """The steps a replaying resume (v2) or a v1 load sends before its tail, faults applied."""
    window = bend(replay_window(sessions, sid, protocol), parse_faults(faults))
    return [a for a in window.replay if isinstance(a, Step)]


def _child_block(child: Session, parent: str) -> list[Action]:
    title = f"subagent {child.sid}"
    announce = Step(
        parent, {"sessionUpdate": "subagent_update", "sessionId": child.sid, "title": title}
    )
    return [announce, *history_steps(child, 2), marker(child.sid)]
