"""The run a drive made, set against its recording: one run against one run.

The recording and the new trace are analyzed as any trace is; the recording's session ids and
request ids are translated to the new run's (the player learned both), so the same request
lines up on each side. Outcomes, outcome counts and finding counts come from the machinery of
`acp-trace diff` (analysis/diff_counts.py); timings are shown side by side, one value each,
and flagged only past a threshold that was asked for: one sample per side supports no
interval, so none is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from acp_trace.analysis.diff_counts import GOOD_OUTCOMES, finding_counts, flips, outcome_counts
from acp_trace.analysis.front import Analysis, analyze
from acp_trace.drive.content import DEFAULT_HISTORY_DROP, content_regressions, pairs
from acp_trace.drive.player import PlayResult
from acp_trace.jsonrpc import error_detail, id_key
from acp_trace.quantities import count, fixed
from acp_trace.weight import DEFAULT, WeightOptions


@dataclass(frozen=True)
class Threshold:
    """How much slower a timing must be to count as a regression (every one given must be
    exceeded); both None: timings are shown, never flagged."""

    pct: float | None = None
    ms: float | None = None

    def exceeded(self, base: float | None, new: float | None) -> bool:
        """True when NEW is slower than BASE by more than every limit given."""
        if (self.pct is None and self.ms is None) or base is None or new is None or new <= base:
            return False
        over_pct = self.pct is None or (base > 0 and (new - base) / base * 100 > self.pct)
        return over_pct and (self.ms is None or new - base > self.ms)


@dataclass
class Comparison:
    """The recording (BASE) and the new run (NEW), side by side."""

    requests: pl.DataFrame  # per client request, in order
    replays: pl.DataFrame  # per replaying request and session
    outcomes: pl.DataFrame  # outcome_counts
    flips: pl.DataFrame
    findings: pl.DataFrame  # finding_counts
    regressions: list[str] = field(default_factory=list)
    new: Analysis | None = None


REQUEST_SCHEMA = {
    "n": pl.Int64,
    "method": pl.String,
    "session": pl.String,
    "recorded": pl.String,
    "this_run": pl.String,
    "recorded_ms": pl.Float64,
    "this_run_ms": pl.Float64,
}


def compare(
    recording: Path,
    result: PlayResult,
    threshold: Threshold | None = None,
    history_drop: float = DEFAULT_HISTORY_DROP,
    weight: WeightOptions = DEFAULT,
) -> Comparison:
    """Analyze both traces and set them side by side (the recording's first trace only); what
    each replay carried is judged against the recorded one (`drive/content.py`)."""
    base, new = analyze([recording], weight=weight), analyze([result.trace], weight=weight)
    first = base.timeline["trace"].first() if base.timeline.height else None
    base_tl = base.timeline.filter(pl.col("trace") == first)
    ids = {
        id_key(s.step.recorded_id): id_key(s.live_id) for s in result.sent if s.live_id is not None
    }
    agent = _agent(new.timeline)
    base_replays = _translated(base.replays.filter(pl.col("trace") == first), result, ids, agent)
    new_replays = new.replays.with_columns(pl.lit(agent).alias("agent"))
    numbers = {
        id_key(s.live_id): n for n, s in enumerate((s for s in result.sent if s.step.is_request), 1)
    }
    side = _side_by_side(base_replays, new_replays)
    side = side.with_columns(
        pl.col("request_id").replace_strict(numbers, default=None, return_dtype=pl.Int64).alias("n")
    )
    cmp = Comparison(
        requests=_requests(result, base_tl, new.timeline),
        replays=side,
        outcomes=outcome_counts(base_replays, new_replays),
        flips=flips(base_replays, new_replays),
        findings=finding_counts(base.findings().filter(pl.col("trace") == first), new.findings()),
        new=new,
    )
    cmp.regressions = regressions(cmp, result, threshold or Threshold(), numbers)
    matched = pairs(base, new, None if first is None else str(first), result.sessions, ids)
    cmp.regressions += content_regressions(base, new, matched, numbers, history_drop)
    return cmp


def _agent(timeline: pl.DataFrame) -> str:
    """The new run's agent: both sides are counted under its name."""
    names = [a for a in timeline["agent"].drop_nulls().unique(maintain_order=True).to_list()]
    return names[0] if names else "agent"


def _translated(
    replays: pl.DataFrame, result: PlayResult, ids: dict[str, str], agent: str
) -> pl.DataFrame:
    """The recording's replay rows named with the new run's session and request ids."""
    return replays.with_columns(
        pl.col("session").replace(result.sessions),
        pl.col("parent_session").replace(result.sessions),
        pl.col("request_id").replace(ids),
        pl.lit(agent).alias("agent"),
    )


def _requests(result: PlayResult, base_tl: pl.DataFrame, new_tl: pl.DataFrame) -> pl.DataFrame:
    """Each request sent, its recorded and its new answer and latency (the n-th client request
    of each trace is the n-th request step)."""

    def latencies(tl: pl.DataFrame) -> list[float | None]:
        rows = tl.filter(pl.col("src") == "client", pl.col("kind") == "request")
        return rows["latency_ms"].to_list()

    base_ms, new_ms = latencies(base_tl), latencies(new_tl)
    rows = []
    requests = [s for s in result.sent if s.step.is_request]
    for n, sent in enumerate(requests):
        step = sent.step
        recorded = _status(step.reply is not None, step.recorded_error)
        this_run = _status(sent.answer is not None, sent.error_code)
        session = result.sessions.get(step.session or "", step.session)
        rows.append(
            (n + 1, step.method, session, recorded, this_run,
             _at(base_ms, n), _at(new_ms, n))
        )  # fmt: skip
    return pl.DataFrame(rows, schema=REQUEST_SCHEMA, orient="row")


def _at(values: list[float | None], i: int) -> float | None:
    return values[i] if 0 <= i < len(values) else None


def _status(answered: bool, code: int | None) -> str:
    if not answered:
        return "no answer"
    return "ok" if code is None else f"error {code}"


SIDE_COLUMNS = ("method", "outcome", "history_updates", "live_updates", "gap_ms", "response_ms")


def _side_by_side(base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """One row per replay on either side, its values from each side (`recorded_X`,
    `this_run_X`)."""
    key = ["session", "request_id"]

    def side(replays: pl.DataFrame, prefix: str) -> pl.DataFrame:
        gap = pl.coalesce("marker_to_response_ms", "last_history_to_response_ms")
        return replays.with_columns(gap.alias("gap_ms")).select(
            *key, *(pl.col(c).alias(f"{prefix}_{c}") for c in SIDE_COLUMNS)
        )

    joined = side(base, "recorded").join(
        side(new, "this_run"), on=key, how="full", coalesce=True, nulls_equal=True
    )
    return joined.select(
        pl.coalesce("recorded_method", "this_run_method").alias("method"),
        *key,
        *(f"{s}_{c}" for c in SIDE_COLUMNS[1:] for s in ("recorded", "this_run")),
    )


def regressions(
    cmp: Comparison, result: PlayResult, threshold: Threshold, numbers: dict[str, int]
) -> list[str]:
    """One sentence per thing that got worse than the recording; empty when nothing did."""
    out = []
    if result.problem is not None:
        out.append(f"the run stopped: {result.problem}")
    for r in cmp.requests.iter_rows(named=True):
        if r["recorded"] == "ok" and r["this_run"] != "ok":
            said = _error_said(result, r["n"])
            out.append(f"{_request(r)}: ok in the recording, {r['this_run']} in this run{said}")
        elif threshold.exceeded(r["recorded_ms"], r["this_run_ms"]):
            out.append(
                f"{_request(r)}: {fixed(r['recorded_ms'], 1)} -> {fixed(r['this_run_ms'], 1)} ms"
            )
    for r in cmp.flips.filter(pl.col("worse")).iter_rows(named=True):
        out.append(
            f"{_numbered(numbers.get(r['request_id']))} {r['method']} on {r['session']}: replay "
            f"{r['base_outcome']} -> {r['new_outcome']}"
        )
    flipped = set(cmp.flips["new_outcome"].to_list())
    for r in cmp.outcomes.filter(pl.col("worse")).iter_rows(named=True):
        if r["outcome"] not in flipped:
            out.append(
                f"{r['method']}: {count(r['new_count'])} {r['outcome']} replays, none recorded"
            )
    for r in cmp.replays.iter_rows(named=True):
        if r["recorded_outcome"] in GOOD_OUTCOMES and r["this_run_outcome"] is None:
            out.append(
                f"{_numbered(r['n'])} {r['method']} on {r['session']}: replay "
                f"{r['recorded_outcome']} in the recording, no replay in this run"
            )
        if threshold.exceeded(r["recorded_gap_ms"], r["this_run_gap_ms"]):
            out.append(
                f"{_numbered(r['n'])} {r['method']} on {r['session']}: gap "
                f"{fixed(r['recorded_gap_ms'], 1)} -> {fixed(r['this_run_gap_ms'], 1)} ms"
            )
    new_errors = cmp.findings.filter((pl.col("change") == "new") & (pl.col("severity") == "error"))
    for r in new_errors.iter_rows(named=True):
        out.append(f"rule {r['rule']} (error): {count(r['new_count'])} in this run, none recorded")
    return out


def _error_said(result: PlayResult, n: int) -> str:
    """`: MESSAGE (data: ...)` of the n-th request's error answer (empty when none)."""
    requests = [s for s in result.sent if s.step.is_request]
    answer = requests[n - 1].answer if 0 < n <= len(requests) else None
    error = answer.get("error") if answer is not None else None
    return f": {error_detail(error)}" if error is not None else ""


def _request(r: dict[str, object]) -> str:
    where = f" on {r['session']}" if r["session"] else ""
    return f"{_numbered(r['n'])} {r['method']}{where}"


def _numbered(n: object) -> str:
    """`request N`, or what a replay row without a number is: a recorded request this run
    never sent (the play stopped before it)."""
    return f"request {n}" if isinstance(n, int) else "a recorded request never sent:"


__all__ = ["GOOD_OUTCOMES", "Comparison", "Threshold", "compare"]
