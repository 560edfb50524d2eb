"""The demo agent's sessions: fabricated histories and the replay plan of a resume or load.

A replay plan is the list of steps the agent sends before it responds: session updates (on
the session or on a child) and agent requests. Faults named after the rules (rules.md) bend
the plan; the faults that concern the response itself are handled by the agent.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp_trace.jsonrpc import MARKER_KIND

Update = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """One thing to send during a replay: an update on `session`, or a permission request."""

    session: str
    update: Update | None = None  # None: a session/request_permission for `session`


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


def marker(sid: str) -> Step:
    """The replay_complete marker on `sid`."""
    return Step(sid, {"sessionUpdate": MARKER_KIND})


def history_steps(session: Session, protocol: int, faults: frozenset[str]) -> list[Step]:
    """The session's turns as replay steps (no children, no marker)."""
    steps = [
        Step(session.sid, update)
        for i, turn in enumerate(session.turns)
        for update in message_updates(session.sid, i, turn, protocol)
    ]
    if "message-id-missing" in faults:
        for step in steps:
            assert step.update is not None
            step.update.pop("messageId", None)
    return steps


def replay_plan(
    sessions: dict[str, Session], sid: str, protocol: int, faults: frozenset[str]
) -> list[Step]:
    """Everything a replaying resume (v2, with markers and children) or a v1 load sends."""
    session = sessions[sid]
    steps = history_steps(session, protocol, faults)
    if protocol < 2:
        return steps
    kids = session.children
    for j in reversed(range(len(kids))):  # from the end, so earlier positions stay valid
        at = 2 * ((j + 1) * len(session.turns) // (len(kids) + 1))
        steps[at:at] = _child_block(sessions[kids[j]], sid, faults)
    if "live-before-marker" in faults:
        commands = [{"name": "help", "description": "Show help"}]
        live = {"sessionUpdate": "available_commands_update", "availableCommands": commands}
        steps.insert(0, Step(sid, live))
    if "request-before-marker" in faults:
        steps.insert(len(steps) // 2, Step(sid))
    if not faults & {"marker-missing", "marker-late"}:
        steps.append(marker(sid))
    if "marker-duplicate" in faults:
        steps.append(marker(sid))
    return steps


def _child_block(child: Session, parent: str, faults: frozenset[str]) -> list[Step]:
    title = f"subagent {child.sid}"
    announce = Step(
        parent, {"sessionUpdate": "subagent_update", "sessionId": child.sid, "title": title}
    )
    body = history_steps(child, 2, faults)
    if "child-marker-missing" not in faults:
        body.append(marker(child.sid))
    if "child-marker-before-announce" in faults:
        return [*body, announce]
    return [announce, *body]


# ---------------------------------------------------------------- delays

Delay = Callable[[random.Random], float]


def parse_gap(spec: str) -> Delay:
    """A delay in seconds from `0.5`, `uniform:A,B`, `lognormal:MU,SIGMA` or `exponential:MEAN`.

    lognormal draws exp(N(MU, SIGMA)) seconds: `lognormal:0.7,0.5` has a median of 2 s, like a
    cold start. Raises ValueError for anything else.
    """
    name, _, args = spec.partition(":")
    if not args:
        value = float(name)
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"gap {spec!r}: expected a non-negative number of seconds")
        return lambda _rng: value
    nums = [float(a) for a in args.split(",")]
    if name == "uniform" and len(nums) == 2:
        return lambda rng: rng.uniform(nums[0], nums[1])
    if name == "lognormal" and len(nums) == 2:
        return lambda rng: rng.lognormvariate(nums[0], nums[1])
    if name == "exponential" and len(nums) == 1:
        return lambda rng: rng.expovariate(1 / nums[0])
    raise ValueError(
        f"gap {spec!r}: expected SECONDS, uniform:A,B, lognormal:MU,SIGMA or exponential:MEAN"
    )
