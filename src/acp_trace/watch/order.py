"""The events of each trace in the order of their times, though the analyzer decides some of
them later than the records they are about arrive.

A `replay_started` or a `marker` is known the moment its record is read; a replay's
`response` (its outcome and gap) and the findings only once the analyzer has run over the
records. `Order` holds a trace's events while one of its replays has been answered but not
yet decided, and lets them out sorted by `t_ms` once the run that read the answer is over:
a response does not come after a later replay's start. Following live, a hold lasts at most
`hold` seconds (the engine's clock): past it the held events go out, and a response the
analyzer decides later comes after them, so the live latency stays bounded (issue 31). `settle` (`--once`) holds every event
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


HOLD_SECONDS = 0.2  # following live, the longest a trace's events wait for a verdict


@dataclass
class Order:
    settle: bool = False  # hold everything until the analyzer is idle (`--once`)
    hold: float = HOLD_SECONDS
    held: dict[str, list[Event]] = field(default_factory=dict)
    # per trace, the answers read and not yet analyzed: (t_ms, the run that will analyze
    # them, when the answer was read)
    answered: dict[str, list[tuple[float, int, float]]] = field(default_factory=dict)

    def answer(self, trace: str, t_ms: float | None, run: int, now: float = 0.0) -> None:
        """A replaying request of `trace` was answered at `t_ms`, read at `now`; run number
        `run` of the analyzer is the first to read the answer."""
        t = -1.0 if t_ms is None else t_ms
        self.answered.setdefault(trace, []).append((t, run, now))

    def analyzed(self, run: int) -> None:
        """Run number `run` is over: the answers it read are decided."""
        for trace in list(self.answered):
            left = [(t, r, since) for t, r, since in self.answered[trace] if r > run]
            if left:
                self.answered[trace] = left
            else:
                del self.answered[trace]

    def forget(self, trace: str) -> list[Event]:
        """A trace read again from its start: what was held of it goes out as it is."""
        self.answered.pop(trace, None)
        return sorted(self.held.pop(trace, []), key=_key)

    def put(
        self, events: list[Event], *, idle: bool, traces: list[str], now: float = 0.0
    ) -> list[Event]:
        """Take the events of a step; return those that may go out now, in order: trace by
        trace, in the order of `traces` (those followed). `idle`: everything read has been
        analyzed; `now`: the engine's clock (a hold ends `hold` seconds after its answer was
        read, unless `settle`)."""
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
            pending = [
                t
                for t, _r, since in self.answered.get(trace, ())
                if self.settle or now - since <= self.hold
            ]
            if pending:
                barrier = (1, min(pending))
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
