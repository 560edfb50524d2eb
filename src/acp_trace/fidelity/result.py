"""What the fidelity pass gives for each replay row: its fields (rules.md "Replay fidelity")
and every difference behind them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_trace.fidelity.spans import ReplaySpan

TEXT_PREVIEW = 80  # characters of a message's text a difference shows

# what a difference is, in the order a person reads them
WHATS = (
    "missing",
    "extra",
    "duplicated",
    "id_changed",
    "prompt_id_changed",
    "reordered",
    "truncated",
    "chunk_before_message",
)


@dataclass(frozen=True)
class Difference:
    """One message that differs between a replay and its source."""

    what: str  # one of WHATS
    kind: str  # user_message, agent_message, agent_thought, session_message, tool_call
    source_id: Any
    replay_id: Any
    source_trace: str | None
    source_seq: int | None
    replay_seq: int | None
    source_bytes: int | None
    replay_bytes: int | None
    text: str  # the first TEXT_PREVIEW characters of its content text (raw: escape to show)


@dataclass
class ReplayFidelity:
    """The fidelity fields of one replay row and the differences behind them."""

    span: ReplaySpan
    source: str | None = None
    source_complete: bool | None = None
    source_trace: str | None = None
    source_seq: int | None = None  # the source's first record (E's request or the first turn's)
    source_replay: bool | None = None  # the source starts with an earlier replay (E)
    source_turns: int | None = None  # the prompt turns in the source (after E when there is one)
    source_messages: int | None = None
    replay_messages: int = 0
    replay_missing: int | None = None
    replay_extra: int | None = None
    replay_duplicated: int = 0
    replay_id_changed: int | None = None
    replay_reordered: int | None = None
    replay_truncated: int | None = None
    replay_truncated_bytes: int | None = None
    prompt_id_changed: int = 0
    unstable_ids: int = 0  # id changes outside the prompts' ids (replay-id-unstable)
    chunks_before_message: int = 0
    prompt_keys: frozenset[str] = frozenset()  # the exact ids of the v2 prompts' messages
    differences: list[Difference] = field(default_factory=list)


FIELDS = (
    "source",
    "source_complete",
    "source_messages",
    "replay_missing",
    "replay_extra",
    "replay_duplicated",
    "replay_id_changed",
    "replay_reordered",
    "replay_truncated",
    "replay_truncated_bytes",
)


def preview(text: str) -> str:
    """The first characters of a message's text a difference shows."""
    return text[:TEXT_PREVIEW]
