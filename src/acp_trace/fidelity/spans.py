"""The spans fidelity reads, as plain values the analyzer hands over: replays, prompt turns and
the sessions a `session/new` made, each placed in recording order (rules.md: recordings by the
header's `started_at`, then by path; inside one, by seq)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReplaySpan:
    """One replay row: a replaying request on one session (a parent or a covered child)."""

    trace: str
    order: int  # the recording's place among all traces given
    session: str
    req_row: int
    stop_row: int | None  # the session's marker, else the window's end; None: the trace's end
    end_row: int | None  # the response (or connection end); None: open
    v2: bool
    ok: bool  # answered with success
    agent: str | None = None  # the agent's name: a session is its agent's (see `Sources`)

    @property
    def place(self) -> tuple[int, int]:
        return (self.order, self.req_row)


@dataclass(frozen=True)
class TurnSpan:
    """One prompt turn on a session: from the request to its end (None: the trace's end)."""

    trace: str
    order: int
    session: str
    req_row: int
    end_row: int | None
    v2: bool
    prompt: Any  # the request's `params.prompt`
    message_id: Any  # v2: the `messageId` the prompt's response returned (None: none)
    req_seq: int | None = None  # the prompt request's seq (where the user's message was sent)
    agent: str | None = None

    @property
    def place(self) -> tuple[int, int]:
        return (self.order, self.req_row)


@dataclass(frozen=True)
class NewSession:
    """A session that a successful `session/new` made (its history is all in the traces)."""

    session: str
    order: int
    row: int
    agent: str | None = None

    @property
    def place(self) -> tuple[int, int]:
        return (self.order, self.row)
