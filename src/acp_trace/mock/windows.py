"""A recorded cue as a window (demo/faults.py), so the demo agent's faults bend it too.

The agent's lines before the response are split where the replay ends: after the last history
update or marker on the request's session or on a child announced in the window (`replay`);
what follows, up to the response, is the `tail` (live updates, the state snapshot). Lines
after the response are `after`. Only resumes and loads get faults, and only when the
recording answered them with success: an error window is played as it was.
"""

from __future__ import annotations

from collections.abc import Callable

from acp_trace.demo.faults import FaultSet, bend
from acp_trace.demo.window import (
    LOAD,
    REPLAY,
    RESUME,
    Action,
    Crash,
    Reply,
    Step,
    Window,
    kind_of,
)
from acp_trace.jsonrpc import (
    AIR_EVENT_META,
    MARKER_KIND,
    as_dict,
    as_str,
    is_air_event,
    update_class,
)
from acp_trace.mock.recording import Cue, Line

OTHER = "request"  # a window kind bend leaves alone: initialize, session/new, prompts, ...


def kind_of_cue(cue: Cue, protocol: int | None) -> str:
    """REPLAY, RESUME, LOAD or OTHER, from the recorded request."""
    if cue.method == "session/load":
        return LOAD
    if cue.method == "session/resume":
        replaying = (protocol or 1) >= 2 and cue.params.get("replayFrom") is not None
        return REPLAY if replaying else RESUME
    return OTHER


def step_of(line: Line) -> Step:
    """A recorded line as a step: an update or an agent request on its session, or other."""
    if line.kind != "msg":
        return Step(None, item=line)
    params = as_dict(line.msg.get("params"))
    session = as_str(params.get("sessionId"))
    method = as_str(line.msg.get("method"))
    if "id" in line.msg and method is not None:
        return Step(session, ask=method, item=line)
    update = params.get("update")
    if method == "session/update" and isinstance(update, dict):
        return Step(session, update, item=line)
    return Step(session, item=line)


def window_of(cue: Cue, protocol: int | None) -> Window:
    """The window of one recorded request (its reply as the Reply, lines split around it)."""
    session = cue.session or ""
    at = cue.lines.index(cue.reply) if cue.reply is not None else len(cue.lines)
    before = [step_of(line) for line in cue.lines[:at]]
    after: list[Action] = [step_of(line) for line in cue.lines[at + 1 :]]
    kind = kind_of_cue(cue, protocol)
    end = _replay_end(before, session) if kind != OTHER else len(before)
    replay: list[Action] = list(before[:end])
    tail: list[Action] = list(before[end:])
    return Window(session, kind, replay, tail, Reply(item=cue.reply), after)


def _replay_end(steps: list[Step], sid: str) -> int:
    """Just past the last history update or marker on `sid` or on a child it announced."""
    covered = {sid}
    end = 0
    for i, step in enumerate(steps):
        kind = kind_of(step)
        if step.session not in covered or kind is None:
            continue
        if kind == "subagent_update":
            child = as_str((step.update or {}).get("sessionId"))
            if child is not None:
                covered.add(child)
        if kind == MARKER_KIND or update_class(kind) == "history":
            end = i + 1
    return end


def succeeded(cue: Cue) -> bool:
    """True when the recording answered the request with a success response."""
    return cue.reply is not None and "result" in cue.reply.msg


def prepared(
    cue: Cue, protocol: int | None, faults: FaultSet, pause: Callable[[], float] | None = None
) -> Window:
    """The window to play for a cue: bent by the faults (and the gap) when they apply."""
    window = window_of(cue, protocol)
    if window.kind == OTHER or not succeeded(cue):
        return window
    return bend(window, faults, pause)


def with_air_event(window: Window, cue: Cue) -> Window:
    """`acp-trace mock --air`, to a client that advertised JetBrains AIR's `loadReplayEnd`: what
    claude-agent-acp 0.101.0 sends such a client after the whole replay of a load or a resume
    with a cursor, one `session_info_update` carrying `_meta.jetbrains.air.loadReplayEnd =
    true` on the root session, added at the end of the replay when the recording has none
    there; not when the recording answered with an error or a fault stops the replay."""
    if window.kind not in (LOAD, REPLAY) or not succeeded(cue) or window.reply.error is not None:
        return window
    if any(isinstance(a, Crash) for a in window.replay):
        return window
    if any(isinstance(a, Step) and is_air_event(a.update) for a in window.sequence()):
        return window
    event = {"sessionUpdate": "session_info_update", "_meta": AIR_EVENT_META}
    window.replay.append(Step(window.session, event))
    return window
