"""Faults named after the replay fidelity rules (rules.md "Replay fidelity"), applied to the
history a replay carries on its session.

Each one changes the session's own messages in the replay of a window (a v2 replaying resume
or a v1 load): the children, markers and live updates stay as they are. Most act on the last
agent message of the history, which is the last prompt turn's when the session had one on this
connection (the source a replay is compared with). The faults that need a `messageId` act on
v2 messages only; a v1 replay has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from acp_trace.demo.window import Action, Step, kind_of
from acp_trace.jsonrpc import MESSAGE_KINDS

# name -> what it does (demo/faults.py makes them Faults: `acp-trace mock` applies them too)
FIDELITY_FAULTS: dict[str, str] = {
    "replay-missing-messages": "the replay leaves out the last agent message",
    "replay-id-unstable": "v2: the agent messages replayed under new messageIds",
    "replay-prompt-id-changed": (
        "v2: the user messages replayed under new messageIds, not those the prompts returned"
    ),
    "replay-duplicate-message": "v2: the last agent message replayed twice",
    "replay-chunk-before-message": (
        "v2: the last agent message replayed as a chunk, then its update with `content: []`"
    ),
    "replay-truncated-content": "v2: the last agent message replayed cut to half its text",
    "replay-reordered": "the last agent message replayed first",
    "replay-extra-messages": "an agent message the session never had, first in the replay",
}
NEVER_SAID = "a message this session never had (injected)"
_AGENT_KINDS = frozenset({"agent_message", "agent_message_chunk"})


def bend_history(replay: list[Action], sid: str, names: frozenset[str]) -> list[Action]:
    """The replay with the fidelity faults among `names` applied to the messages on `sid`."""
    out = list(replay)
    for name, apply in _APPLY.items():
        if name in names:
            out = apply(out, sid)
    return out


def _messages(replay: list[Action], sid: str) -> list[int]:
    """Where the messages on `sid` are in the replay."""
    return [
        i
        for i, a in enumerate(replay)
        if isinstance(a, Step) and a.session == sid and kind_of(a) in MESSAGE_KINDS
    ]


def _last_agent(replay: list[Action], sid: str) -> int | None:
    agent = [i for i in _messages(replay, sid) if kind_of(replay[i]) in _AGENT_KINDS]
    return agent[-1] if agent else None


def _update(action: Action) -> dict[str, Any]:
    assert isinstance(action, Step) and action.update is not None
    return action.update


def _with(action: Action, **changes: Any) -> Step:
    assert isinstance(action, Step)
    return replace(action, update={**_update(action), **changes})


def _missing(replay: list[Action], sid: str) -> list[Action]:
    last = _last_agent(replay, sid)
    return replay if last is None else replay[:last] + replay[last + 1 :]


def _new_ids(kinds: frozenset[str]) -> Callable[[list[Action], str], list[Action]]:
    """Every message of `kinds` on the session that has a messageId, under another one."""

    def apply(replay: list[Action], sid: str) -> list[Action]:
        out = list(replay)
        for i in _messages(replay, sid):
            update = _update(out[i])
            if kind_of(out[i]) in kinds and isinstance(update.get("messageId"), str):
                out[i] = _with(out[i], messageId=f"{update['messageId']}-replayed")
        return out

    return apply


def _whole_last(replay: list[Action], sid: str) -> int | None:
    """The last agent message when it is a v2 whole-message update with a messageId."""
    last = _last_agent(replay, sid)
    if last is None or kind_of(replay[last]) != "agent_message":
        return None
    return last if isinstance(_update(replay[last]).get("messageId"), str) else None


def _duplicate(replay: list[Action], sid: str) -> list[Action]:
    last = _whole_last(replay, sid)
    return replay if last is None else [*replay[: last + 1], *replay[last:]]


def _chunk_first(replay: list[Action], sid: str) -> list[Action]:
    last = _whole_last(replay, sid)
    if last is None:
        return replay
    update = _update(replay[last])
    content = update.get("content")
    kind, mid = "agent_message_chunk", update["messageId"]
    chunks: list[Action] = [
        Step(sid, {"sessionUpdate": kind, "messageId": mid, "content": block})
        for block in (content if isinstance(content, list) else [])
    ]
    return [*replay[:last], *chunks, _with(replay[last], content=[]), *replay[last + 1 :]]


def _truncated(replay: list[Action], sid: str) -> list[Action]:
    last = _whole_last(replay, sid)
    if last is None:
        return replay
    blocks = _update(replay[last]).get("content")
    text = "".join(
        str(b.get("text", ""))
        for b in blocks or []
        if isinstance(b, dict) and b.get("type") == "text"
    )
    cut = [{"type": "text", "text": text[: len(text) // 2]}]
    return [*replay[:last], _with(replay[last], content=cut), *replay[last + 1 :]]


def _reordered(replay: list[Action], sid: str) -> list[Action]:
    messages, last = _messages(replay, sid), _last_agent(replay, sid)
    if last is None or last == messages[0]:
        return replay
    out = replay[:last] + replay[last + 1 :]
    out.insert(messages[0], replay[last])
    return out


def _extra(replay: list[Action], sid: str) -> list[Action]:
    messages = _messages(replay, sid)
    at = messages[0] if messages else len(replay)
    update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk"}
    update["content"] = {"type": "text", "text": NEVER_SAID}
    if any("messageId" in _update(replay[i]) for i in messages):  # v2: a whole message
        update = {"sessionUpdate": "agent_message", "messageId": f"{sid}-never"}
        update["content"] = [{"type": "text", "text": NEVER_SAID}]
    return [*replay[:at], Step(sid, update), *replay[at:]]


_APPLY: dict[str, Callable[[list[Action], str], list[Action]]] = {
    "replay-missing-messages": _missing,
    "replay-id-unstable": _new_ids(frozenset({"agent_message", "agent_message_chunk"})),
    "replay-prompt-id-changed": _new_ids(frozenset({"user_message", "user_message_chunk"})),
    "replay-duplicate-message": _duplicate,
    "replay-chunk-before-message": _chunk_first,
    "replay-truncated-content": _truncated,
    "replay-reordered": _reordered,
    "replay-extra-messages": _extra,
}
