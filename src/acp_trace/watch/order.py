"""The events of each trace in the order of their times, though the analyzer decides some of
them later than the records they are about arrive.

A `replay_started` or a `marker` is known the moment its record is read; a replay's
`response` (its outcome and gap) and the findings only once the analyzer has run over the
records. `Order` holds a trace's events while one of its replays has been answered but not
yet decided, and lets them out sorted by `t_ms` once the run that read the answer is over:
a response never comes after a later replay's start. `settle` (`--once`) holds every event
until everything read has been analyzed, so that each trace's events are in time order,
findings included. Events of no trace's timeline (`skipped`, `error`, `passed_over`) go out
at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]
UNTIMED = ("skipped", "error", "passed_over", "trace_reopened")


def _key(event: Event) -> tuple[int, float]:
    """trace_started first, trace_ended last, the rest by `t_ms` (an untimed one last)."""
    name = event["event"]
    if name == "trace_started":
        return 0, 0.0
    if name == "trace_ended":
        return 2, 0.0
    t = event.get("t_ms")
    return 1, float("inf") if t is None else float(t)


@dataclass
class Order:
    settle: bool = False  # hold everything until the analyzer is idle (`--once`)
    held: dict[str, list[Event]] = field(default_factory=dict)
    # per trace, the answers read and not yet analyzed: (t_ms, the run that will analyze them)
    answered: dict[str, list[tuple[float, int]]] = field(default_factory=dict)

    def answer(self, trace: str, t_ms: float | None, run: int) -> None:
        """A replaying request of `trace` was answered at `t_ms`; run number `run` of the
        analyzer is the first to read the answer."""
        self.answered.setdefault(trace, []).append((-1.0 if t_ms is None else t_ms, run))

    def analyzed(self, run: int) -> None:
        """Run number `run` is over: the answers it read are decided."""
        for trace in list(self.answered):
            left = [(t, r) for t, r in self.answered[trace] if r > run]
            if left:
                self.answered[trace] = left
            else:
                del self.answered[trace]

    def forget(self, trace: str) -> list[Event]:
        """A trace read again from its start: what was held of it goes out as it is."""
        self.answered.pop(trace, None)
        return sorted(self.held.pop(trace, []), key=_key)

    def put(self, events: list[Event], *, idle: bool, traces: list[str]) -> list[Event]:
        """Take the events of a step; return those that may go out now, in order: trace by
        trace, in the order of `traces` (those followed). `idle`: everything read has been
        analyzed."""
        out: list[Event] = []
        for event in events:
            if event["event"] in UNTIMED:
                if event["event"] == "trace_reopened":
                    out.extend(self.forget(event["trace"]))
                out.append(event)
            else:
                self.held.setdefault(event["trace"], []).append(event)
        if self.settle and not idle:
            return out
        rank = {name: i for i, name in enumerate(traces)}
        for trace in sorted(self.held, key=lambda name: rank.get(name, len(rank))):
            waiting = sorted(self.held[trace], key=_key)
            pending = self.answered.get(trace)
            if pending:
                barrier = (1, min(t for t, _r in pending))
                cut = next((i for i, e in enumerate(waiting) if _key(e) > barrier), len(waiting))
            else:
                cut = len(waiting)
            out.extend(waiting[:cut])
            if waiting[cut:]:
                self.held[trace] = waiting[cut:]
            else:
                del self.held[trace]
        return out

    def holding(self) -> bool:
        return bool(self.held)
