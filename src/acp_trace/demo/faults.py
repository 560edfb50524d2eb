"""Faults named after the rules (rules.md), applied to one window of an agent's traffic.

A window is what an agent sends for one resume or load: the replay (history, children,
markers), the tail (live updates, the state snapshot), the response, and what follows the
response. The demo agent builds correct windows from a fabricated history and `acp-trace mock`
builds them from a recording; `bend` makes either break the rule a fault is named after.
Connection-level faults (`non-json-line`, `orphan-response`) and those that need a history to
invent (`marker-unexpected`, `replay-without-cursor`) stay with the demo agent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from acp_trace.demo.fidelity_faults import FIDELITY_FAULTS, bend_history
from acp_trace.demo.window import (
    CRASH_EXIT_CODE,
    LOAD,
    PERMISSION_METHOD,
    REPLAY,
    Action,
    Crash,
    Pause,
    Step,
    Window,
    kind_of,
    live_step,
    marker,
)
from acp_trace.jsonrpc import (
    HISTORY_KINDS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LIVE_KINDS,
    MARKER_KIND,
    MESSAGE_KINDS,
)


@dataclass(frozen=True)
class Fault:
    """One injectable fault: what it does, and whether `acp-trace mock` can apply it."""

    says: str
    mock: bool = True
    takes: str | None = None  # the name of its `:N` argument, when it takes one
    required: bool = False  # the argument must be given

    def usage(self, name: str) -> str:
        """`name`, `name[:N]` or `name:N`."""
        if self.takes is None:
            return name
        return f"{name}:{self.takes}" if self.required else f"{name}[:{self.takes}]"


FAULTS: dict[str, Fault] = {
    "marker-missing": Fault("v2 replay without the replay_complete marker"),
    "marker-late": Fault("the marker comes after the response"),
    "marker-duplicate": Fault("two markers for one resume"),
    "marker-unexpected": Fault(
        "a marker on session/new and on a resume without cursor", mock=False
    ),
    "marker-with-rejection": Fault("the marker without the replay, then -32602"),
    "live-before-marker": Fault("an available_commands_update before the replayed history"),
    "request-before-marker": Fault("a session/request_permission in the middle of the replay"),
    "child-marker-missing": Fault(
        "child sessions get no marker (demo-agent: implies one child at least)"
    ),
    "child-marker-before-announce": Fault(
        "a child's replay and marker come before its subagent_update"
    ),
    "state-snapshot-missing": Fault("no state_update before the resume response"),
    "message-id-missing": Fault("v2 replayed messages carry no messageId"),
    "replay-without-cursor": Fault(
        "a resume without cursor (v1: session/resume) replays the history", mock=False
    ),
    "load-updates-after-response": Fault(
        "v1 load: the response after the first update, then the rest"
    ),
    "crash-mid-replay": Fault(
        f"exit with code {CRASH_EXIT_CODE} in the middle of the replay (`:N`: after N updates)",
        takes="N",
    ),
    "error-after-marker": Fault("the replay and its marker, then -32603"),
    "truncate": Fault(
        "the first N history updates of the replay, no marker, then -32603",
        takes="N",
        required=True,
    ),
    "non-json-line": Fault("a line of plain text on stdout after the initialize response", False),
    "orphan-response": Fault("a response to no request after the initialize response", False),
    **{name: Fault(says) for name, says in FIDELITY_FAULTS.items()},  # demo/fidelity_faults.py
}


@dataclass(frozen=True)
class FaultSet:
    """The faults asked for, with their arguments (`crash-mid-replay:N`, `truncate:N`)."""

    names: frozenset[str] = frozenset()
    crash_after: int | None = None
    truncate_after: int | None = None

    def __contains__(self, name: object) -> bool:
        return name in self.names


def parse_faults(specs: Iterable[str], *, mock: bool = False) -> FaultSet:
    """`NAME` or `NAME:N` specs into a FaultSet; ValueError names what is wrong and what is known."""
    names: set[str] = set()
    args: dict[str, int] = {}
    for spec in specs:
        name, colon, arg = spec.partition(":")
        fault = FAULTS.get(name)
        if fault is None or (mock and not fault.mock):
            known = [n for n, f in FAULTS.items() if f.mock or not mock]
            raise ValueError(f"unknown fault {spec!r}; known: {', '.join(known)}")
        if colon and fault.takes is None:
            raise ValueError(f"fault {spec!r}: {name} takes no argument")
        if (colon and not arg.isdigit()) or (fault.required and not colon):
            raise ValueError(f"fault {spec!r}: expected {fault.usage(name)}, N a whole number")
        if colon:
            args[name] = int(arg)
        names.add(name)
    return FaultSet(frozenset(names), args.get("crash-mid-replay"), args.get("truncate"))


def _is_marker(action: Action, sid: str) -> bool:
    return isinstance(action, Step) and action.session == sid and kind_of(action) == MARKER_KIND


def _is_live(action: Action, sid: str) -> bool:
    return isinstance(action, Step) and action.session == sid and kind_of(action) in LIVE_KINDS


def _is_history(action: Action, sid: str | None = None) -> bool:
    if not isinstance(action, Step) or (sid is not None and action.session != sid):
        return False
    return kind_of(action) in HISTORY_KINDS


# ---------------------------------------------------------------- bending


def bend(window: Window, faults: FaultSet, pause: Callable[[], float] | None = None) -> Window:
    """The window with the faults that apply to its kind, and `pause` before its tail.

    Faults that need a marker put one where a correct agent would (at the end of the replay)
    when the window has none; the pause is left out when the response is an injected error
    or comes right after the first update.
    """
    w = replace(window, replay=list(window.replay), tail=list(window.tail))
    w.after = list(window.after)
    if "message-id-missing" in faults:
        w.replay = [_without_message_id(a) for a in w.replay]
    if w.kind in (REPLAY, LOAD) and faults.names & FIDELITY_FAULTS.keys():
        w.replay = bend_history(w.replay, w.session, faults.names)
    if w.kind == REPLAY:
        _bend_markers(w, faults)
    if "state-snapshot-missing" in faults:
        w.replay = [a for a in w.replay if not _is_state(a, w.session)]
        w.tail = [a for a in w.tail if not _is_state(a, w.session)]
    injected = _inject_error(w, faults)
    split = (
        not injected
        and "load-updates-after-response" in faults
        and w.kind == LOAD
        and _split_load(w)
    )
    if "crash-mid-replay" in faults:
        _insert_crash(w, faults.crash_after)
    if pause is not None and not injected and not split:
        w.tail.insert(0, Pause(pause))
    return w


def _bend_markers(w: Window, faults: FaultSet) -> None:
    """The faults of a v2 replaying resume: children, markers, live and request steps."""
    sid = w.session
    if "child-marker-missing" in faults:
        w.replay = [a for a in w.replay if not _is_child_marker(a, sid)]
    if "child-marker-before-announce" in faults:
        w.replay = _announce_late(w.replay, sid)
    if faults.names & {"marker-missing", "marker-late"}:
        w.replay = [a for a in w.replay if not _is_marker(a, sid)]
    elif faults.names & _NEED_A_MARKER and not any(_is_marker(a, sid) for a in w.replay):
        # where a correct agent puts it: after the history, the live updates after it
        live = [a for a in w.replay if _is_live(a, sid)]
        w.replay = [*(a for a in w.replay if not _is_live(a, sid)), marker(sid), *live]
    if "live-before-marker" in faults:
        w.replay.insert(0, live_step(sid))
    if "request-before-marker" in faults:
        others = sum(1 for a in w.replay if not _is_marker(a, sid))
        w.replay.insert(others // 2, Step(sid, ask=PERMISSION_METHOD))
    if "marker-duplicate" in faults:
        last = max(i for i, a in enumerate(w.replay) if _is_marker(a, sid))
        w.replay.insert(last + 1, marker(sid))
    if "marker-late" in faults:
        w.after.insert(0, marker(sid))


# The faults whose rule speaks of the marker: a window without one gets one (the demo's have one).
_NEED_A_MARKER = frozenset(
    {
        "marker-duplicate",
        "marker-with-rejection",
        "error-after-marker",
        "live-before-marker",
        "request-before-marker",
    }
)


def _inject_error(w: Window, faults: FaultSet) -> bool:
    """`truncate:N`, `error-after-marker`, `marker-with-rejection`: True when one applied."""
    error: tuple[int, str] | None = None
    n = faults.truncate_after
    if n is not None and w.kind in (REPLAY, LOAD):
        w.replay = _first_history(w.replay, w.session, n)
        error = (INTERNAL_ERROR, f"the replay was cut after {n} history updates (injected)")
    elif w.kind == REPLAY and "error-after-marker" in faults:
        error = (INTERNAL_ERROR, "internal error after the replay (injected)")
    elif w.kind == REPLAY and "marker-with-rejection" in faults:
        # only the marker: history before -32602 would break updates-with-rejection too
        w.replay = [a for a in w.replay if _is_marker(a, w.session)]
        error = (INVALID_PARAMS, "cursor rejected, yet marked as replayed (injected)")
    if error is None:
        return False
    w.tail, w.after, w.reply = [], [], replace(w.reply, error=error)
    return True


def _split_load(w: Window) -> bool:
    """The response right after the first update, the rest of the replay after it."""
    first = next((i for i, a in enumerate(w.replay) if kind_of(a) is not None), None)
    if first is None:
        return False
    w.after[:0] = w.replay[first + 1 :]
    w.replay = w.replay[: first + 1]
    return True


def _insert_crash(w: Window, after: int | None) -> None:
    """A Crash after `after` updates of the replay (by default half of them, and no crash when
    it has none); after its last update when it has fewer."""
    updates = [i for i, a in enumerate(w.replay) if kind_of(a) is not None]
    if not updates:
        if after is not None:
            w.replay.append(Crash())
        return
    stops = [updates[0], *(i + 1 for i in updates)]  # before the first, after each
    n = len(updates) // 2 if after is None else after
    w.replay.insert(stops[min(n, len(updates))], Crash())


def _first_history(replay: list[Action], sid: str, n: int) -> list[Action]:
    """The replay up to its n-th history update on `sid`, without the markers on `sid`."""
    out: list[Action] = []
    seen = 0
    for action in replay:
        if seen >= n:
            break
        if not _is_marker(action, sid):
            out.append(action)
        seen += _is_history(action, sid)
    return out


def _announce_late(replay: list[Action], sid: str) -> list[Action]:
    """Each child's subagent_update moved to just after the child's last step."""
    out = list(replay)
    for announce in [a for a in replay if _announced(a, sid) is not None]:
        child = _announced(announce, sid)
        last = max(
            (i for i, a in enumerate(out) if isinstance(a, Step) and a.session == child),
            default=None,
        )
        if last is not None and last > out.index(announce):
            out.remove(announce)
            out.insert(last, announce)
    return out


def _announced(action: Action, sid: str) -> str | None:
    if isinstance(action, Step) and action.session == sid and kind_of(action) == "subagent_update":
        child = (action.update or {}).get("sessionId")
        return child if isinstance(child, str) else None
    return None


def _is_child_marker(action: Action, sid: str) -> bool:
    return kind_of(action) == MARKER_KIND and isinstance(action, Step) and action.session != sid


def _is_state(action: Action, sid: str) -> bool:
    return isinstance(action, Step) and action.session == sid and kind_of(action) == "state_update"


def _without_message_id(action: Action) -> Action:
    if not isinstance(action, Step) or kind_of(action) not in MESSAGE_KINDS:
        return action
    if action.update is None or "messageId" not in action.update:
        return action
    update = {k: v for k, v in action.update.items() if k != "messageId"}
    return replace(action, update=update)
