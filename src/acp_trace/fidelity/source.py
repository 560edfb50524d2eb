"""The source of a replay (rules.md "The source of a replay"): S's latest earlier successful
replay E and the prompt turns on S recorded after it (all of S's turns when there is no E)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from acp_trace.fidelity.content import content_text
from acp_trace.fidelity.messages import Built, Message, build, exact_key
from acp_trace.fidelity.rows import AgentRows
from acp_trace.fidelity.spans import NewSession, ReplaySpan, TurnSpan

Key = tuple[str | None, str]  # (the agent's name, the session id)


@dataclass
class Source:
    """What a replay is compared with: `kind` live, replay or None (no source)."""

    kind: str | None
    complete: bool | None
    replay: ReplaySpan | None = None  # E
    turns: list[TurnSpan] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    prompt_ids: dict[str, str] = field(default_factory=dict)  # v2 prompt messageId -> text


@dataclass
class Plan:
    """A replay's source as spans: E (`replay`), the turns after it, and every turn on the
    session before the replay (`before`: the prompts' messageIds are looked for there)."""

    kind: str | None
    complete: bool | None
    replay: ReplaySpan | None
    turns: list[TurnSpan]
    before: list[TurnSpan]


class Sources:
    """Finds each replay's source over all the spans of all the traces given. A session is
    known by its agent's name and its id: another agent's session that happens to carry the
    same id (fabricated ids, test fixtures) is not its history."""

    def __init__(
        self,
        rows: AgentRows,
        replays: Sequence[ReplaySpan],
        turns: Sequence[TurnSpan],
        new_sessions: Sequence[NewSession],
    ) -> None:
        self.rows = rows
        self.replays: dict[Key, list[ReplaySpan]] = defaultdict(list)
        for r in sorted(replays, key=lambda r: r.place):
            self.replays[(r.agent, r.session)].append(r)
        self.turns: dict[Key, list[TurnSpan]] = defaultdict(list)
        for t in sorted(turns, key=lambda t: t.place):
            self.turns[(t.agent, t.session)].append(t)
        self.made: dict[Key, tuple[int, int]] = {}
        for n in new_sessions:
            key = (n.agent, n.session)
            if key not in self.made or n.place < self.made[key]:
                self.made[key] = n.place
        self._turn_messages: dict[tuple[int, int], list[Message]] = {}
        self._replays_built: dict[tuple[int, int, str], Built] = {}

    def plan(self, r: ReplaySpan) -> Plan:
        """Where a replay's source lies, without its messages."""
        key = (r.agent, r.session)
        earlier = [e for e in self.replays[key] if e.ok and e.place < r.place]
        e = earlier[-1] if earlier else None
        before = [t for t in self.turns[key] if t.place < r.place]
        turns = [t for t in before if t.place > e.place] if e is not None else before
        if e is None and not turns:
            return Plan(None, None, None, [], before)
        made = self.made.get(key)
        complete = made is not None and made < r.place
        return Plan("live" if turns else "replay", complete, e, turns, before)

    def of(self, r: ReplaySpan) -> Source:
        p = self.plan(r)
        prompt_ids = self._prompt_ids(p.before)
        if p.kind is None:
            return Source(None, None, prompt_ids=prompt_ids)
        messages = list(self.replay_messages(p.replay)) if p.replay is not None else []
        for t in p.turns:
            messages.extend(self.turn_messages(t))
        return Source(p.kind, p.complete, p.replay, p.turns, messages, prompt_ids)

    def replay_built(self, r: ReplaySpan) -> Built:
        """What a replay carried on its session before its marker (built once: a replay is
        compared with its source, and is the source of the next one)."""
        key = (r.order, r.req_row, r.session)
        if key not in self._replays_built:
            updates = self.rows.between(r.trace, r.req_row, r.stop_row)
            built = build(updates, r.session, v2=r.v2)
            _from(r.trace, built.messages)
            self._replays_built[key] = built
        return self._replays_built[key]

    def replay_messages(self, r: ReplaySpan) -> list[Message]:
        return self.replay_built(r).messages

    def turn_messages(self, t: TurnSpan) -> list[Message]:
        """The messages of a live turn: the user's message first unless the agent sent it."""
        key = t.place
        if key not in self._turn_messages:
            sent = build(self.rows.between(t.trace, t.req_row, t.end_row), t.session, v2=t.v2)
            messages = sent.messages
            if not any(m.kind == "user_message" for m in messages):
                ident = t.message_id if t.v2 else None
                prompt = Message("user_message", ident, t.req_row, t.req_seq)
                prompt.pieces.append(content_text(t.prompt))
                prompt.done()
                messages = [prompt, *messages]
            self._turn_messages[key] = _from(t.trace, messages)
        return self._turn_messages[key]

    def _prompt_ids(self, turns: list[TurnSpan]) -> dict[str, str]:
        """The v2 prompts' messageIds on the session, each with its user message's text."""
        out: dict[str, str] = {}
        for t in turns:
            if not t.v2 or t.message_id is None:
                continue
            key = exact_key(t.message_id)
            users = [m for m in self.turn_messages(t) if m.kind == "user_message"]
            named = [m for m in users if m.key == key] or users[:1]
            out[key] = named[0].text if named else ""
        return out


def _from(trace: str, messages: list[Message]) -> list[Message]:
    for m in messages:
        m.trace = trace
    return messages
