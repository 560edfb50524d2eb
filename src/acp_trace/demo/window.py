"""A window of an agent's traffic: what it sends for one resume or load, in order.

The replay (history, children, markers), the tail (live updates, the state snapshot), the
reply, and what follows the reply; steps, pauses and crashes. The demo agent builds correct
windows, `acp-trace mock` builds them from a recording, and demo/faults.py bends them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp_trace.jsonrpc import MARKER_KIND

Update = dict[str, Any]
CRASH_EXIT_CODE = 3
PERMISSION_METHOD = "session/request_permission"

# Window kinds: a v2 resume with a replayFrom cursor, a resume without one, a v1 session/load.
REPLAY, RESUME, LOAD = "replay", "resume", "load"


@dataclass(frozen=True)
class Step:
    """One message of a window: an update on `session`, or (`ask`) an agent request for it.

    `item` is the sender's own payload (the mock's recorded line); a step a fault adds has none.
    """

    session: str | None
    update: Update | None = None
    ask: str | None = None
    item: Any = None


@dataclass(frozen=True)
class Pause:
    """Wait before going on: `draw()` gives the seconds, drawn when the pause is played."""

    draw: Callable[[], float]


@dataclass(frozen=True)
class Crash:
    """Exit at once with `code`, sending nothing more."""

    code: int = CRASH_EXIT_CODE


Action = Step | Pause | Crash


@dataclass(frozen=True)
class Reply:
    """The response to the window's request: as built (`item`), or an injected `error`."""

    item: Any = None
    error: tuple[int, str] | None = None


@dataclass
class Window:
    """What one resume or load sends: replay, tail, the reply, then what follows the reply."""

    session: str
    kind: str  # REPLAY, RESUME or LOAD
    replay: list[Action]
    tail: list[Action] = field(default_factory=list)
    reply: Reply = field(default_factory=Reply)
    after: list[Action] = field(default_factory=list)

    def sequence(self) -> list[Action | Reply]:
        """Everything in the order it is sent, the reply in its place."""
        return [*self.replay, *self.tail, self.reply, *self.after]


def marker(sid: str) -> Step:
    """The replay_complete marker on `sid`."""
    return Step(sid, {"sessionUpdate": MARKER_KIND})


def live_step(sid: str) -> Step:
    """The live update `live-before-marker` puts before the history (a v2 resume's: a v2
    command carries its `type`)."""
    commands = [{"type": "command", "name": "help", "description": "Show help"}]
    return Step(sid, {"sessionUpdate": "available_commands_update", "availableCommands": commands})


def permission_params(sid: str, protocol: int = 2) -> dict[str, Any]:
    """The params of the permission request `request-before-marker` sends (v1 or v2 shape)."""
    tool_call = {"toolCallId": "call_replay", "title": "Read the project files"}
    options = [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
    if protocol < 2:
        return {"sessionId": sid, "toolCall": tool_call, "options": options}
    subject = {"type": "tool_call", "toolCall": tool_call}
    return {"sessionId": sid, "title": tool_call["title"], "subject": subject, "options": options}


def kind_of(action: Action | Reply) -> str | None:
    """The `sessionUpdate` of an update step, else None."""
    if isinstance(action, Step) and action.update is not None:
        kind = action.update.get("sessionUpdate")
        return kind if isinstance(kind, str) else None
    return None


Delay = Callable[[random.Random], float]


def parse_gap(spec: str) -> Delay:
    """A delay in seconds from `0.5`, `uniform:A,B`, `lognormal:MU,SIGMA` or `exponential:MEAN`.

    lognormal draws exp(N(MU, SIGMA)) seconds: `lognormal:0.7,0.5` has a median of 2 s, like a
    cold start. Raises ValueError for anything else.
    """
    name, _, args = spec.partition(":")
    expected = "expected SECONDS, uniform:A,B, lognormal:MU,SIGMA or exponential:MEAN"
    try:
        nums = [float(a) for a in (args.split(",") if args else [name])]
    except ValueError:
        raise ValueError(f"gap {spec!r}: {expected}") from None
    if not args:
        value = nums[0]
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"gap {spec!r}: expected a non-negative number of seconds")
        return lambda _rng: value
    if name == "uniform" and len(nums) == 2:
        return lambda rng: rng.uniform(nums[0], nums[1])
    if name == "lognormal" and len(nums) == 2:
        return lambda rng: rng.lognormvariate(nums[0], nums[1])
    if name == "exponential" and len(nums) == 1:
        return lambda rng: rng.expovariate(1 / nums[0])
    raise ValueError(f"gap {spec!r}: {expected}")
