"""Matching a replay's messages to its source's, and the differences that come of it
(rules.md "Matching": by id first, then by equal content text, in order, kind by kind)."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from acp_trace.fidelity.messages import Message


@dataclass(frozen=True)
class Pair:
    """A source message and the replay message matched to it (`by` "id" or "content")."""

    source: Message
    replay: Message
    by: str


@dataclass
class Matching:
    pairs: list[Pair]
    missing: list[Message]  # source messages with no match, in source order
    extra: list[Message]  # replay messages with no match, in replay order
    reordered: list[Pair]  # matched messages outside the longest run in source order


def match(source: Sequence[Message], replay: Sequence[Message]) -> Matching:
    """Each source message matched to at most one replay message of the same kind."""
    taken: set[int] = set()  # id() of replay messages already matched
    by_id: dict[tuple[str, str], deque[Message]] = defaultdict(deque)
    by_text: dict[tuple[str, str], deque[Message]] = defaultdict(deque)
    for m in replay:
        if m.key is not None:
            by_id[(m.kind, m.key)].append(m)
        by_text[(m.kind, m.text)].append(m)
    found: dict[int, Pair] = {}  # source index -> pair
    for i, s in enumerate(source):
        if s.key is not None:
            hit = _first_free(by_id.get((s.kind, s.key)), taken)
            if hit is not None:
                found[i] = Pair(s, hit, "id")
    for i, s in enumerate(source):
        if i not in found:
            hit = _first_free(by_text.get((s.kind, s.text)), taken)
            if hit is not None:
                found[i] = Pair(s, hit, "content")
    pairs = [found[i] for i in sorted(found)]
    missing = [s for i, s in enumerate(source) if i not in found]
    extra = [m for m in replay if id(m) not in taken]
    return Matching(pairs, missing, extra, _out_of_order(pairs, replay))


def _first_free(candidates: deque[Message] | None, taken: set[int]) -> Message | None:
    """The first candidate not taken yet, now taken. A candidate once taken stays taken, so
    those before the first free one are dropped: linear over many messages of one text."""
    while candidates:
        m = candidates.popleft()
        if id(m) not in taken:
            taken.add(id(m))
            return m
    return None


def _out_of_order(pairs: list[Pair], replay: Sequence[Message]) -> list[Pair]:
    """The pairs outside one longest subsequence that keeps the source order, read in replay
    order (`pairs` is in source order; replay messages are in order of their first record)."""
    place = {id(m): i for i, m in enumerate(replay)}
    in_replay = sorted(range(len(pairs)), key=lambda i: place[id(pairs[i].replay)])
    keep = longest_increasing(in_replay)
    return [pairs[i] for i in sorted(set(in_replay) - keep)]


def longest_increasing(values: list[int]) -> set[int]:
    """One longest strictly increasing subsequence of `values` (patience sorting, n log n)."""
    tails: list[int] = []  # tails[k]: the least last value of an increasing run of length k+1
    tail_at: list[int] = []  # the position in `values` of tails[k]
    back: list[int] = [-1] * len(values)
    for pos, v in enumerate(values):
        k = bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_at.append(pos)
        else:
            tails[k], tail_at[k] = v, pos
        back[pos] = tail_at[k - 1] if k else -1
    out: set[int] = set()
    pos = tail_at[-1] if tail_at else -1
    while pos >= 0:
        out.add(values[pos])
        pos = back[pos]
    return out
