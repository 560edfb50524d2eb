"""Deciding outcomes and findings while a trace is written: the analyzer of `check` and
`replays` (`acp_trace.analysis.Analysis`) run over the records read so far, no second
implementation of any rule.

The records of a trace are parsed once, into records frames (the reader's own line parser),
and an analysis joins them and runs the passes. It runs on a bounded cadence: at once when
something was decided (a replaying request answered, the trace ended), else at most every
`interval` seconds, and never more than `BUDGET` of the time (after a run analyzing for D
seconds the next waits D / BUDGET; parsing the new lines is not counted: it cannot be put
off). A run is a `Job`: `add` only queues the lines read, and the job parses those queued
since the last one, then analyzes. With `background` it runs in a thread of its own, so that
following the files and drawing the screen go on while it works (polars lets go of the GIL
in its kernels); a later step collects its verdicts. The lines queued are bounded: past
`BACKLOG` the engine reads no more until the job has taken them (`backlog`).

A run costs the same at the thousandth replay as at the first: once a run has analyzed a
quiet point (a request sent while nothing was pending), the settled windows before it are
folded out of the rows the next runs read, all but the few context rows later rules look
back at (`watch.fold`). Without quiet points, past `MAX_ROWS` rows the analyzed bulky rows
before the oldest replay still open are let go, and past `THIN_ROWS` those inside it too.
Findings are reported once per rule and record and never taken back; those at folded
records were out when their window was analyzed. The rules about the end of a trace
(`END_RULES`) wait for its end.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from acp_trace.analysis import Analysis
from acp_trace.trace.lines import SCHEMA, Table
from acp_trace.trace.native import read_range
from acp_trace.watch.fold import fold, like, quiet_cut, stem, thin, trim
from acp_trace.weight import DEFAULT, WeightOptions

FOLD_ROWS = 2_000  # rows of settled windows past which they are folded out (watch.fold)
MAX_ROWS = 20_000  # rows kept per trace past which the analyzed bulky rows are let go
THIN_ROWS = 60_000  # rows past which those of the replays still open are let go too
BUDGET = 0.25  # the share of the time the analysis may take
BACKLOG = 20_000  # lines queued for the next run past which the files are not read on
END_RULES = frozenset({"unanswered-request", "cancel-unanswered"})
# Said once a window is answered (or its trace ended): its longest silence grows till then.
WINDOW_RULES = frozenset({"silence-past-client-deadline", "replay-outlasts-quiet-window"})


def finding_key(f: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a finding new: its rule, session, record and message (without the count of
    others like it); `frame-over-client-limit` once per side and limit, as `check` says it
    (the lines that pass it after the first, or after the first was folded, are the same
    finding)."""
    if f["rule"] == "frame-over-client-limit":
        return (f["rule"], f["side"], None, f["message"].split(";", 1)[0])
    return (f["rule"], f["session"], f["seq"], stem(f["message"]))


def _answered(a: Analysis) -> set[int]:
    """The seqs of the requests that have their response."""
    tl = a.timeline
    done = tl.filter((pl.col("kind") == "request") & pl.col("peer_row").is_not_null())
    return set(done["seq"].to_list())


@dataclass
class Decided:
    """A replay the analyzer has decided: its outcome, gap and the largest phase in it."""

    trace: str
    session: str
    request_id: str
    outcome: str
    gap_ms: float | None
    gap_source: str | None  # marker, vendor:PATH, last_history (None without a gap)
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
    waiting: list[bytes] = field(default_factory=list)  # lines read, not parsed yet
    dirty: bool = False
    urgent: bool = False
    ended: bool = False
    cut_seq: int = -1  # findings at or before this seq are not new (their window was folded)
    context: int = 0  # the first rows of the frame: what is kept of the folded windows
    context_seqs: set[int] = field(default_factory=set)  # their seqs
    folded: int = 0  # rows folded out so far
    thinned: dict[str, tuple[int, int]] = field(default_factory=dict)  # updates, bytes let go
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    likes: set[str] = field(default_factory=set)  # schema breaks reported (fold.like)
    decided: set[tuple[Any, ...]] = field(default_factory=set)


class Job:
    """One analysis of the traces that changed, over the lines queued when it was started:
    only it touches those books' frames and reports while it runs."""

    def __init__(
        self,
        work: list[tuple[str, Book, list[bytes], bool]],
        judge: Judge,
        open_since: dict[str, int | None],
    ) -> None:
        self.work, self.judge, self.open_since = work, judge, open_since
        self.number = judge.started  # runs are numbered from 1 as they start
        self.lines = sum(len(lines) for _n, _b, lines, _e in work)
        self.out = Verdicts()
        self.done = threading.Event()
        self.spent = 0.0  # seconds analyzing (the parsing of the lines not counted)

    def run(self) -> None:
        start = time.perf_counter()
        try:
            for name, book, lines, ended in self.work:
                try:
                    parsing = time.perf_counter()
                    self.judge._parse(name, book, lines)
                    start += time.perf_counter() - parsing  # every line must be parsed
                    self.judge._judge(name, book, ended, self.out)
                except Exception as exc:  # a bug in a pass must not end the watch: said, once
                    self.out.errors.append(
                        (name, f"the analysis failed: {type(exc).__name__}: {exc}")
                    )
                if book.rows > MAX_ROWS:
                    self.judge._trim(book, self.open_since.get(name))
        finally:
            self.spent = time.perf_counter() - start
            self.done.set()


class Judge:
    """The analyses of the traces being watched."""

    def __init__(
        self,
        interval: float = 1.0,
        marker_meta: str | None = None,
        *,
        background: bool = False,
        weight: WeightOptions = DEFAULT,
    ) -> None:
        self.interval = interval
        self.marker_meta = marker_meta
        self.weight = weight
        self.background = background
        self.books: dict[str, Book] = {}
        self.job: Job | None = None
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self.worker: threading.Thread | None = None
        self.next_run = 0.0
        self.runs = 0
        self.started = 0  # runs started (the next one to start reads what is read till then)
        self.last_done = 0  # the number of the last run collected
        self.seconds = 0.0  # time spent analyzing, all runs

    def warm(self) -> None:
        """Run the passes once on no records: their imports and set-up are paid before the
        first trace arrives, not while its replay waits for an outcome."""
        Analysis(
            pl.DataFrame(schema=SCHEMA),
            marker_meta=self.marker_meta,
            judge_fidelity=False,
            weight=self.weight,
        ).findings()

    def add(self, trace: str, lines: list[bytes]) -> None:
        """Queue new whole lines of a trace (its first call starts with the header); the
        next run parses them."""
        if not lines:
            return
        book = self.books.setdefault(trace, Book())
        book.waiting.extend(lines)
        book.dirty = True

    def _parse(self, name: str, book: Book, lines: list[bytes]) -> None:
        if not lines:
            return
        data = b"\n".join(lines) + b"\n"
        table = Table()
        read_range(data, 0, len(data), name, table)
        for frame in table.done():
            if book.lines:
                frame = frame.with_columns(pl.col("line") + book.lines)
            book.frames.append(frame)
            book.rows += frame.height
        book.lines += len(lines)

    def reset(self, trace: str) -> None:
        """A trace read again from its start: a run under way on its old book is let be,
        and what it finds is dropped (`collect`)."""
        self.books.pop(trace, None)

    def mark(self, trace: str, *, ended: bool = False) -> None:
        """Something was decided in this trace: analyze it at the next step."""
        book = self.books.get(trace)
        if book is not None:
            book.urgent = True
            book.ended = book.ended or ended

    def due(self, now: float) -> bool:
        if self.job is not None or now < self.next_run:
            return False
        return any(
            b.dirty and (b.urgent or now - self.last_run >= self.interval)
            for b in self.books.values()
        )

    last_run = 0.0

    def backlog(self) -> int:
        """Lines queued for the next run, and those the run under way still parses."""
        queued = sum(len(b.waiting) for b in self.books.values())
        job = self.job
        return queued + (0 if job is None or job.done.is_set() else job.lines)

    def busy(self) -> bool:
        """A run is under way (its verdicts not collected yet)."""
        return self.job is not None

    def start(self, now: float, open_since: dict[str, int | None]) -> None:
        """Start a run over every trace that changed; `open_since`: per trace, the tap stamp
        of its oldest replaying request still waiting for an answer (None when none waits).
        Without `background` it is over when this returns."""
        work = []
        for name, book in self.books.items():
            if book.dirty:
                book.dirty = book.urgent = False
                work.append((name, book, book.waiting, book.ended))
                book.waiting = []
        self.started += 1
        self.job = Job(work, self, open_since)
        self.last_run = now
        if self.background:
            if self.worker is None:  # one thread for every run: one malloc arena, reused
                self.worker = threading.Thread(target=self._serve, name="acp-trace-judge")
                self.worker.daemon = True
                self.worker.start()
            self.jobs.put(self.job)
        else:
            self.job.run()

    def _serve(self) -> None:
        while True:
            self.jobs.get().run()

    def collect(self, now: float) -> Verdicts | None:
        """The verdicts of the run under way once it is over (None before); what it found
        in a trace read again from its start since is dropped."""
        job = self.job
        if job is None or not job.done.is_set():
            return None
        self.job = None
        self.runs += 1
        self.last_done = job.number
        self.seconds += job.spent
        self.next_run = now + job.spent / BUDGET - job.spent
        out = job.out
        current = {name for name, book, _l, _e in job.work if self.books.get(name) is book}
        out.replays = [d for d in out.replays if d.trace in current]
        out.findings = [f for f in out.findings if f["trace"] in current]
        out.errors = [e for e in out.errors if e[0] in current]
        return out

    def run(self, now: float, open_since: dict[str, int | None]) -> Verdicts:
        """A run started and waited for (tests, `--once`)."""
        self.start(now, open_since)
        assert self.job is not None
        self.job.done.wait()
        verdicts = self.collect(now)
        assert verdicts is not None
        return verdicts

    def _judge(self, name: str, book: Book, ended: bool, out: Verdicts) -> None:
        records = (
            pl.concat(book.frames, rechunk=False) if book.frames else pl.DataFrame(schema=SCHEMA)
        )
        if len(book.frames) > 1:
            book.frames = [records]
        # no fidelity pass: the folded records hold neither a replay's whole source nor, while
        # it runs, the whole replay (docs/watch.md; `acp-trace fidelity` reads the recording)
        a = Analysis(
            records, marker_meta=self.marker_meta, judge_fidelity=False, weight=self.weight
        )
        self._replays(name, book, a, out)
        findings = a.findings()
        answered = None
        for f in findings.iter_rows(named=True):
            seq = f["seq"]  # the count of others like it in a message grows: the same finding
            key = finding_key(f)
            if key in book.seen:
                continue
            if f["rule"] in WINDOW_RULES and not ended:
                answered = _answered(a) if answered is None else answered
                if seq not in answered:
                    continue  # the window's silence and quiet end are final at its response
            if seq is not None and seq <= book.cut_seq and seq not in book.context_seqs:
                continue  # a folded record's findings were out when its window was analyzed
            same = like(f["rule"], f["message"])
            if same is not None and same in book.likes:
                continue  # check says it once, at its first message, "and N more like it"
            if f["rule"] in END_RULES and not ended:
                continue
            book.seen.add(key)
            if same is not None:
                book.likes.add(same)
            out.findings.append(f)
        if records.height - book.context >= FOLD_ROWS:
            self._fold(book, records, a)

    def _fold(self, book: Book, records: pl.DataFrame, a: Analysis) -> None:
        """Fold the settled windows out of the book (watch.fold): every row of them has just
        been analyzed and its verdicts are out."""
        tl = a.timeline
        cut = quiet_cut(tl, book.context + 1)
        if cut is None or cut - book.context < FOLD_ROWS:
            return
        kept = fold(records, tl, cut)
        seqs = records["seq"].head(cut).drop_nulls()
        book.cut_seq = max(book.cut_seq, int(seqs.max())) if len(seqs) else book.cut_seq  # type: ignore[arg-type]
        book.context = kept.height - (records.height - cut)
        book.context_seqs = set(kept["seq"].head(book.context).drop_nulls().to_list())
        book.folded += records.height - kept.height
        book.frames, book.rows = [kept], kept.height
        book.seen = {
            k for k in book.seen if k[2] is None or k[2] > book.cut_seq or k[2] in book.context_seqs
        }
        asked = set(kept.filter(pl.col("kind") == "request")["id"].drop_nulls().to_list())
        book.decided = {k for k in book.decided if k[2] in asked}  # the replays still read

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
            updates, size = row["history_updates"], row["history_bytes"]
            let_go = book.thinned.pop(key[1], None)
            if let_go is not None and updates is not None:
                updates, size = updates + let_go[0], (size or 0) + let_go[1]
            out.replays.append(
                Decided(
                    name,
                    key[1],
                    key[2],
                    row["outcome"],
                    row["gap_ms"],  # the analyzer's gap and its source (rules.md)
                    row["gap_source"],
                    updates,
                    size,
                    largest.get(key),
                )
            )

    def _trim(self, book: Book, oldest_open: int | None) -> None:
        """No quiet point to fold at and too many rows: let go of the bulky rows already
        analyzed before the oldest replay still open (watch.fold `trim`); past `THIN_ROWS`,
        of those in the open replays too (counted, and added to their history counts)."""
        records = book.frames[0] if len(book.frames) == 1 else pl.concat(book.frames)
        kept = trim(records, oldest_open, book.lines)
        if kept is not None:
            records = kept
        if records.height > THIN_ROWS and oldest_open is not None:
            thinned = thin(records, book.lines)
            if thinned is not None:
                records, let_go = thinned
                for session, (n, size) in let_go.items():
                    was = book.thinned.get(session, (0, 0))
                    book.thinned[session] = (was[0] + n, was[1] + size)
        book.folded += book.rows - records.height
        book.frames, book.rows = [records], records.height
