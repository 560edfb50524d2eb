"""Deciding outcomes and findings while a trace is written: the analyzer of `check` and
`replays` (`acp_trace.analysis.Analysis`) run over the records read so far, no second
implementation of any rule.

The records of a trace are parsed once, as they arrive, into records frames (the reader's
own line parser); an analysis joins them and runs the passes. It runs on a bounded cadence:
at once when something was decided (a replaying request answered, the trace ended), else at
most every `interval` seconds, and never more than `BUDGET` of the time (after a run of D
seconds the next waits D / BUDGET). Memory is bounded: past `MAX_ROWS` rows, the notifications and stderr lines
before the oldest replay still in progress are let go (every request and response stays:
the rules pair them).
Findings are reported once each and never taken back; after such a cut, only those at
records after it are new. The rules about the end of a trace (`END_RULES`) wait for its end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from acp_trace.analysis import Analysis
from acp_trace.trace.lines import SCHEMA, Table
from acp_trace.trace.native import read_range

MAX_ROWS = 50_000  # records rows kept per trace before the settled updates are let go
BUDGET = 0.25  # the share of the time the analysis may take
END_RULES = frozenset({"unanswered-request", "cancel-unanswered"})


@dataclass
class Decided:
    """A replay the analyzer has decided: its outcome, gap and the largest phase in it."""

    trace: str
    session: str
    request_id: str
    outcome: str
    gap_ms: float | None
    gap_source: str
    history_updates: int | None
    history_bytes: int | None
    phase: str | None


@dataclass
class Verdicts:
    replays: list[Decided] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (trace, what went wrong)


@dataclass
class Book:
    """One trace's records so far, and what was already reported of it."""

    frames: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0
    lines: int = 0  # lines parsed (the next line's number is lines + 1)
    dirty: bool = False
    urgent: bool = False
    ended: bool = False
    cut_seq: int = -1  # findings at or before this seq are not new (their context was cut)
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    decided: set[tuple[str, str, str]] = field(default_factory=set)


class Judge:
    """The analyses of the traces being watched."""

    def __init__(self, interval: float = 1.0, marker_meta: str | None = None) -> None:
        self.interval = interval
        self.marker_meta = marker_meta
        self.books: dict[str, Book] = {}
        self.next_run = 0.0
        self.runs = 0
        self.seconds = 0.0  # time spent analyzing, all runs

    def warm(self) -> None:
        """Run the passes once on no records: their imports and set-up are paid before the
        first trace arrives, not while its replay waits for an outcome."""
        Analysis(pl.DataFrame(schema=SCHEMA), marker_meta=self.marker_meta).findings()

    def add(self, trace: str, lines: list[bytes]) -> None:
        """Parse new whole lines of a trace (its first call starts with the header)."""
        if not lines:
            return
        book = self.books.setdefault(trace, Book())
        data = b"\n".join(lines) + b"\n"
        table = Table()
        read_range(data, 0, len(data), trace, table)
        for frame in table.done():
            if book.lines:
                frame = frame.with_columns(pl.col("line") + book.lines)
            book.frames.append(frame)
            book.rows += frame.height
        book.lines += len(lines)
        book.dirty = True

    def reset(self, trace: str) -> None:
        self.books.pop(trace, None)

    def mark(self, trace: str, *, ended: bool = False) -> None:
        """Something was decided in this trace: analyze it at the next step."""
        book = self.books.get(trace)
        if book is not None:
            book.urgent = True
            book.ended = book.ended or ended

    def due(self, now: float) -> bool:
        if now < self.next_run:
            return False
        return any(
            b.dirty and (b.urgent or now - self.last_run >= self.interval)
            for b in self.books.values()
        )

    last_run = 0.0

    def run(self, now: float, open_since: dict[str, int | None]) -> Verdicts:
        """Analyze every trace that changed; `open_since`: per trace, the tap stamp of its
        oldest replaying request still waiting for an answer (None when none waits)."""
        out = Verdicts()
        start = time.perf_counter()
        for name, book in self.books.items():
            if book.dirty:
                try:
                    self._judge(name, book, out)
                except Exception as exc:  # a bug in a pass must not end the watch: said, once
                    out.errors.append((name, f"the analysis failed: {type(exc).__name__}: {exc}"))
                if book.rows > MAX_ROWS:
                    self._compact(book, open_since.get(name))
        spent = time.perf_counter() - start
        self.runs += 1
        self.seconds += spent
        self.last_run = now
        self.next_run = now + spent / BUDGET - spent
        return out

    def _judge(self, name: str, book: Book, out: Verdicts) -> None:
        book.dirty = book.urgent = False
        records = (
            pl.concat(book.frames, rechunk=False) if book.frames else pl.DataFrame(schema=SCHEMA)
        )
        if len(book.frames) > 1:
            book.frames = [records]
        a = Analysis(records, marker_meta=self.marker_meta)
        self._replays(name, book, a, out)
        findings = a.findings()
        for f in findings.iter_rows(named=True):
            key = (f["rule"], f["session"], f["seq"], f["message"])
            if key in book.seen or (f["seq"] is not None and f["seq"] <= book.cut_seq):
                continue
            if f["rule"] in END_RULES and not book.ended:
                continue
            book.seen.add(key)
            out.findings.append(f)

    def _replays(self, name: str, book: Book, a: Analysis, out: Verdicts) -> None:
        table = a.replays.filter(pl.col("outcome") != "open")
        if table.is_empty():
            return
        phases = a.gap_phases.filter(pl.col("leaf") & pl.col("in_gap_ms").is_not_null())
        largest = {
            (t, s, r): p
            for t, s, r, p in phases.sort("in_gap_ms", descending=True)
            .unique(["trace", "session", "request_id"], keep="first")
            .select("trace", "session", "request_id", "phase")
            .iter_rows()
        }
        for row in table.iter_rows(named=True):
            key = (row["trace"], row["session"] or "", row["request_id"] or "")
            if key in book.decided:
                continue
            book.decided.add(key)
            marker, last = row["marker_to_response_ms"], row["last_history_to_response_ms"]
            out.replays.append(
                Decided(
                    name,
                    key[1],
                    key[2],
                    row["outcome"],
                    marker if marker is not None else last,
                    "marker" if marker is not None else "last_history" if last is not None else "",
                    row["history_updates"],
                    row["history_bytes"],
                    largest.get(key),
                )
            )

    def _compact(self, book: Book, oldest_open: int | None) -> None:
        """Let go of the updates and stderr lines before the oldest replay in progress (see
        the module): requests and responses stay, every rule pairs them."""
        records = book.frames[0] if len(book.frames) == 1 else pl.concat(book.frames)
        settled = pl.lit(True) if oldest_open is None else pl.col("t_ns") < oldest_open
        bulky = (pl.col("kind") == "notification") | (pl.col("src") == "stderr")
        drop = settled & bulky & pl.col("t_ns").is_not_null()
        dropped = records.filter(drop)
        if dropped.is_empty():
            return
        book.cut_seq = max(book.cut_seq, int(dropped["seq"].max() or -1))  # type: ignore[arg-type]
        kept = records.filter(~drop)
        book.frames, book.rows = [kept], kept.height
