"""The watch loop without a screen: follow the files, feed the live picture, let the analyzer
decide, and say what happened as events (one dict each; `--format jsonl` prints them).

Events, each with `event` and `trace` (but `passed_over`):
- `trace_started`: a trace joined (`agent`, `started_at`); said once its agent is named (its
  first initialize answered, or before any other event of it), with the name `replays` gives.
- `passed_over`: files in the watched folders older than `recent` at the start, not read
  (`count`, `why`).
- `skipped`: a file in a watched folder that is no trace of the tap (`why`).
- `trace_reopened`: it was truncated or replaced (`why`): read again from its start.
- `replay_started`: a replaying request went out (`session`, `request_id`, `method`, `t_ms`).
- `vendor_event`: its first vendor end-of-replay event came (`source`, named as `gap_source`
  names it: `vendor:PATH`; `t_ms`, `elapsed_ms`, `history_updates`, `history_bytes` so far).
- `marker`: its `replay_complete` came (`t_ms`, `elapsed_ms` since the request,
  `history_updates` and `history_bytes` so far, counted as `replays` counts them).
- `response`: the analyzer decided the replay after its answer (`outcome`, `gap_ms`,
  `gap_source`, `history_updates`, `history_bytes`, `phase`: the largest phase in the gap).
- `finding`: a rule of `check` broken (`rule`, `severity`, `side`, `session`, `seq`, `t_ms`,
  `message`).
- `error`: the analysis of a trace failed (a bug: the watch goes on, `message` says what).
- `trace_ended`: the agent exited (`code`, `signal`, `errors`, `dropped`, `malformed`), after
  the trace's last findings.
Times `t_ms` are the tap's stamps (ms since the trace's `started_at`). The events of a trace
come in the order of their times (`watch.order`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_trace.watch.follow import RECENT_SECONDS, Folder, Follower
from acp_trace.watch.judge import BACKLOG, Judge, Verdicts
from acp_trace.watch.live import Change, Live, Replay, Trace
from acp_trace.watch.order import HOLD_SECONDS, Order
from acp_trace.weight import DEFAULT, WeightOptions

Event = dict[str, Any]
FINDINGS_KEPT = 1000  # findings the screen lists; older ones are counted
REPLAYS_KEPT = 1000  # finished replays kept per watch; older ones are counted
SCAN_SECONDS = 0.5  # how often the folders are searched for new traces
CATCH_UP = 4  # the most polls (of READ_BYTES each) of one file in one step
QUIET_SECONDS = 30.0  # a trace that has not grown for this long (and has no exit) is quiet


@dataclass
class Engine:
    roots: list[str]
    interval: float = 1.0
    marker_meta: str | None = None
    background: bool = False  # the analyzer in a thread of its own (the screen, jsonl)
    recent: float | None = RECENT_SECONDS  # older traces in a folder are passed over
    settle: bool = False  # each trace's events all in time order, findings too (`--once`)
    hold: float = HOLD_SECONDS  # following live, the longest events wait for a verdict
    clock: Callable[[], float] = time.monotonic
    weight: WeightOptions = DEFAULT  # the client limits and deadlines findings compare with
    live: Live = field(default_factory=Live)
    judge: Judge = field(init=False)
    followers: dict[str, Follower] = field(default_factory=dict)
    grew: dict[str, float] = field(default_factory=dict)  # when each trace last grew
    findings: deque[Event] = field(default_factory=lambda: deque(maxlen=FINDINGS_KEPT))
    finding_count: int = 0
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    ending: set[str] = field(default_factory=set)  # exited, last analysis pending
    lines_read: int = 0
    version: int = 0  # grows whenever a step changed anything shown
    next_scan: float = float("-inf")

    def __post_init__(self) -> None:
        self.folder = Folder(list(self.roots), self.recent)
        self.live.recognise(self.marker_meta)
        self.order = Order(self.settle, self.hold)
        self.judge = Judge(
            self.interval, self.marker_meta, background=self.background, weight=self.weight
        )
        self.judging: set[str] = set()  # exited traces whose last analysis is under way

    def step(self) -> list[Event]:
        """One round: new files, new lines, and (when due) the analyzer's verdicts."""
        now = self.clock()
        events: list[Event] = []
        if now >= self.next_scan:  # the folders, twice a second; the files at every step
            self.next_scan = now + SCAN_SECONDS
            first = self.folder.scans == 0
            for path in self.folder.new_files():
                self.followers[str(path)] = Follower(path)
            if first and self.folder.passed:
                events.append(self._passed_over())
        for name, follower in self.followers.items():
            if self.judge.backlog() >= BACKLOG:  # the analyzer is behind: the file waits
                break
            for _ in range(CATCH_UP):  # a file far ahead: read on, up to CATCH_UP polls
                events.extend(self._read(name, follower, now))
                if not follower.behind():
                    break
        events.extend(self._collect(now))
        if self.judge.due(now):
            self.judging, self.ending = self.ending, set()
            self.judge.start(now, self._open_since())
            events.extend(self._collect(now))  # over already unless in the background
        idle = self.judge_idle() if self.settle else True  # only --once waits for it
        events = self.order.put(events, idle=idle, traces=list(self.followers), now=now)
        if events or self.lines_read != self._last_lines:
            self.version += 1
            self._last_lines = self.lines_read
        return events

    _last_lines = 0

    def _collect(self, now: float) -> list[Event]:
        """The verdicts of the analysis once it is over, then the end of each trace that had
        exited when it started (its last verdicts are out)."""
        verdicts = self.judge.collect(now)
        if verdicts is None:
            return []
        self.order.analyzed(self.judge.last_done)
        events = self._verdicts(verdicts)
        for name in sorted(self.judging):
            trace = self.live.traces.get(name)
            if trace is not None and trace.ended is not None:
                events.extend(self._announce(trace))
                events.append(self._ended(trace))
        self.judging = set()
        return events

    def quiet(self, name: str) -> bool:
        trace = self.live.traces.get(name)
        return bool(
            trace and trace.ended is None and self.clock() - self.grew.get(name, 0) > QUIET_SECONDS
        )

    def _read(self, name: str, follower: Follower, now: float) -> list[Event]:
        polled = follower.poll()
        events: list[Event] = []
        if polled.reopened:
            self.live.reset(name)
            self.judge.reset(name)
            self.ending.discard(name)
            self.judging.discard(name)
            events.append({"event": "trace_reopened", "trace": name, "why": polled.reopened})
        if not polled.lines:
            return events
        if name not in self.live.traces and not _looks_native(polled.lines[0]):
            follower.close()  # a stray file, not a trace of the tap: passed over
            self.followers[name] = _Ignored(Path(name))
            why = "passed over: its first line is no acp-trace v1 header or record"
            return [*events, {"event": "skipped", "trace": name, "why": why}]
        self.grew[name] = now
        self.lines_read += len(polled.lines)
        self.judge.add(name, polled.lines)
        for line in polled.lines:
            for change in self.live.feed(name, line):
                events.extend(self._changed(change))
        return events

    def _announce(self, trace: Trace) -> list[Event]:
        """The trace's `trace_started`, once: when its agent is named, or before its first
        other event."""
        if trace.announced:
            return []
        trace.announced = True
        started = trace.header.get("started_at")
        return [
            {
                "event": "trace_started",
                "trace": trace.name,
                "agent": trace.agent,
                "started_at": started,
            }
        ]

    def _changed(self, change: Change) -> list[Event]:
        trace, replay = change.trace, change.replay
        if change.what in ("trace_started", "agent_named"):
            return self._announce(trace) if change.what == "agent_named" else []
        if change.what == "trace_ended":
            self.ending.add(trace.name)
            self.judge.mark(trace.name, ended=True)
            return []
        assert replay is not None
        out = self._announce(trace)
        if change.what == "replay_started":
            self._forget_old_replays()
            t_ms = replay.t_req / 1e6
            started = {"event": "replay_started", **_where(replay), "method": replay.method}
            return [*out, {**started, "t_ms": t_ms}]
        if change.what in ("marker", "vendor_event"):
            t = (replay.t_marker if change.what == "marker" else replay.t_vendor) or 0
            event: Event = {"event": change.what, **_where(replay)}
            if change.what == "vendor_event":
                event["source"] = f"vendor:{replay.vendor}"
            event.update(t_ms=t / 1e6, elapsed_ms=(t - replay.t_req) / 1e6)
            event.update(history_updates=replay.updates, history_bytes=replay.bytes)
            return [*out, event]
        self.judge.mark(trace.name)  # a response: the analyzer decides the outcome now
        answered = None if replay.t_response is None else replay.t_response / 1e6
        self.order.answer(trace.name, answered, self.judge.started + 1, self.clock())
        return out

    def _passed_over(self) -> Event:
        minutes = f"{self.recent / 60:g}" if self.recent is not None else "?"
        why = (
            f"not modified in the {minutes} minutes before the watch started; name a file, "
            "or use --once, to read it whatever its age"
        )
        return {"event": "passed_over", "count": self.folder.passed, "why": why}

    def _verdicts(self, verdicts: Verdicts) -> list[Event]:
        events: list[Event] = []
        for d in verdicts.replays:
            replay = self.live.replays.get((d.trace, d.request_id, d.session))
            if replay is not None:
                replay.outcome, replay.gap_ms, replay.phase = d.outcome, d.gap_ms, d.phase
                replay.gap_source = d.gap_source
            t_ms = None if replay is None or replay.t_response is None else replay.t_response / 1e6
            events.append(
                {
                    "event": "response",
                    "trace": d.trace,
                    "session": d.session,
                    "request_id": d.request_id,
                    "t_ms": t_ms,
                    "outcome": d.outcome,
                    "gap_ms": d.gap_ms,
                    "gap_source": d.gap_source,
                    "history_updates": d.history_updates,
                    "history_bytes": d.history_bytes,
                    "phase": d.phase,
                }
            )
        for trace, message in verdicts.errors:
            self.errors.append(f"{trace}: {message}")
            events.append({"event": "error", "trace": trace, "message": message})
        for f in verdicts.findings:
            event = {
                "event": "finding",
                **{
                    k: f[k]
                    for k in (
                        "trace",
                        "rule",
                        "severity",
                        "side",
                        "session",
                        "seq",
                        "t_ms",
                        "message",
                    )
                },
            }
            self.findings.append(event)
            self.finding_count += 1
            self._attach(event)
            events.append(event)
        return events

    def _attach(self, finding: Event) -> None:
        """Show a finding on the replay of its session it happened in (the latest before)."""
        t = finding["t_ms"]
        best: Replay | None = None
        for replay in self.live.replays.values():
            if (
                replay.trace == finding["trace"]
                and replay.session == finding["session"]
                and (t is None or replay.t_req / 1e6 <= t)
            ):
                best = replay
        if best is not None:
            best.findings.append(finding["rule"])

    def _ended(self, trace: Any) -> Event:
        ended = trace.ended or {}
        return {
            "event": "trace_ended",
            "trace": trace.name,
            "code": ended.get("code"),
            "signal": ended.get("signal"),
            "errors": list(trace.errors),
            "dropped": trace.dropped,
            "malformed": trace.malformed,
        }

    def _open_since(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for replay in self.live.replays.values():
            if replay.t_response is None:
                now = out.get(replay.trace)
                out[replay.trace] = replay.t_req if now is None else min(now, replay.t_req)
        return out

    def _forget_old_replays(self) -> None:
        finished = [k for k, r in self.live.replays.items() if r.outcome is not None]
        for key in finished[: max(0, len(finished) - REPLAYS_KEPT)]:
            del self.live.replays[key]

    def judge_idle(self) -> bool:
        """Every line read has been analyzed and nothing waits to be said."""
        if self.ending or self.judge.busy() or any(b.dirty for b in self.judge.books.values()):
            return False
        return not any(f.behind() for f in self.followers.values())

    def all_ended(self) -> bool:
        """At least one trace is followed, every one has ended and its verdicts are out."""
        traces = self.live.traces.values()
        ended = all(t.ended is not None for t in traces)
        return bool(traces) and ended and self.judge_idle() and not self.order.holding()

    def close(self) -> None:
        for follower in self.followers.values():
            follower.close()


class _Ignored(Follower):
    """A file in a watched folder that is not a tap's trace: never read again."""

    def poll(self, limit: int = 0) -> Any:
        from acp_trace.watch.follow import Poll

        return Poll([])


def _looks_native(line: bytes) -> bool:
    from acp_trace.trace.native import is_native

    return is_native(line)


def _where(replay: Replay) -> Event:
    return {"trace": replay.trace, "session": replay.session, "request_id": replay.request_id}
