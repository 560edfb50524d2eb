"""The weight fields of each replay row (rules.md "Replay weight, client limits and
deadlines"): bytes by kind, the largest line, the children's bytes, the longest silence and
what a quiet-window client would have made of the replay. Each window's rows are a few runs of
sorted columns (`lines.AgentLines`), taken for all windows at once and aggregated by polars:
linear in the trace, and no numpy (its import alone would cost `replays` on a small trace a
sixth of its time and memory)."""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from acp_trace.weight.lines import AgentLines, line_rows
from acp_trace.weight.options import WeightOptions

FIELDS = (
    "bytes_by_kind",
    "largest_update_bytes",
    "largest_update_kind",
    "largest_update_seq",
    "children_bytes",
    "longest_silence_ms",
    "quiet_end_ms",
    "updates_after_quiet_end",
)


class SessionSpan(NamedTuple):
    """One session a replaying request covers: S itself, or a child from its announcement."""

    session: str
    parent: str | None
    announce_row: int | None
    marker_row: int | None  # its marker in the window: history counts stop there


class WindowSpan(NamedTuple):
    """A request's window: from the request to its response (`end_row`, `responded`), the end
    of its connection (`end_row`) or the trace's end (None), and the sessions it covers."""

    trace: str
    req_row: int
    end_row: int | None
    responded: bool
    sessions: tuple[SessionSpan, ...]


class ReplayWeight(NamedTuple):
    """The fields of one replay row, in FIELDS order; `largest_row` is the largest line's
    timeline row (for messages and charts)."""

    bytes_by_kind: list[dict[str, object]]
    largest_update_bytes: int | None
    largest_update_kind: str | None
    largest_update_seq: int | None
    children_bytes: int
    longest_silence_ms: float | None
    quiet_end_ms: float | None
    updates_after_quiet_end: int | None
    largest_row: int | None


class _Bounds(NamedTuple):
    """Where each window stops (the row it stops before), its start and end times (None
    when untimed)."""

    hi: list[int]
    t0: list[float | None]
    t_end: list[float | None]


def _time(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)  # NaN: untimed


def _bounds(a: AgentLines, tl: pl.DataFrame, windows: list[WindowSpan]) -> _Bounds:
    """The row each window stops before and its end time (response, connection or trace end)."""
    ends = trace_ends(tl)
    at = a.t.gather([w.end_row if w.end_row is not None else 0 for w in windows]).to_list()
    his, t_end = [], []
    for w, t in zip(windows, at, strict=True):
        last_row, last_t = ends[w.trace]
        his.append(last_row + 1 if w.end_row is None else w.end_row)
        t_end.append(_time(last_t if w.end_row is None else t))
    t0 = [_time(t) for t in a.t.gather([w.req_row for w in windows]).to_list()]
    return _Bounds(his, t0, t_end)


def replay_weights(
    tl: pl.DataFrame,
    windows: list[WindowSpan],
    options: WeightOptions,
    lines: pl.DataFrame | None = None,
) -> list[ReplayWeight]:
    """One ReplayWeight per session of each window, in order (`lines`: `line_rows(tl)`,
    when the caller has it)."""
    if not windows:
        return []
    a = AgentLines(tl, line_rows(tl) if lines is None else lines)
    b = _bounds(a, tl, windows)
    silence = _silences(a, windows, b)
    entries = _entries(a, windows, b)
    quiet = _quiet_ends(entries, b, options)
    (by_kind, totals), largest = _by_kind(entries), _largest(entries)
    after = _after(entries, b.t0, quiet)
    out: list[ReplayWeight] = []
    i = 0
    for k, w in enumerate(windows):
        # a session named twice: its last entry, as its start in `_entries`
        own = {s.session: totals.get(i + j, 0) for j, s in enumerate(w.sessions)}
        for j, s in enumerate(w.sessions):
            n, kind, seq, row = largest.get(i + j, (None, None, None, None))
            children = sum(own[c] for c in _descendants(w.sessions, s.session))
            found = after.get(i + j, 0) if quiet[k] is not None else None
            kinds = by_kind.get(i + j, [])
            out.append(
                ReplayWeight(kinds, n, kind, seq, children, silence[k], quiet[k], found, row)
            )
        i += len(w.sessions)
    return out


def silences(
    tl: pl.DataFrame, windows: list[WindowSpan], lines: pl.DataFrame | None = None
) -> list[float | None]:
    """The longest silence of each window (for `session/new` windows, which have no row)."""
    if not windows:
        return []
    a = AgentLines(tl, line_rows(tl) if lines is None else lines)
    return _silences(a, windows, _bounds(a, tl, windows))


def trace_ends(tl: pl.DataFrame) -> dict[str, tuple[int, float]]:
    """Per trace: its last row and its latest time (NaN when untimed)."""
    ends = tl.group_by("trace").agg(pl.col("row").max(), pl.col("t_ms").max())
    return {t: (int(r), float("nan") if m is None else m) for t, r, m in ends.iter_rows()}


def _silences(a: AgentLines, windows: list[WindowSpan], b: _Bounds) -> list[float | None]:
    """Each window's longest interval with no agent line: from R's time through the lines'
    times to the end's, times going backwards ignored (a running maximum)."""
    rows = a.heads["row"]
    start = rows.search_sorted(pl.Series([w.req_row for w in windows]), side="right")
    stop = rows.search_sorted(pl.Series(b.hi, dtype=pl.Int64), side="left")
    runs = pl.DataFrame({"w": range(len(windows)), "a": start.cast(pl.Int64)})
    runs = runs.with_columns(b=pl.max_horizontal(pl.col("a"), stop.cast(pl.Int64)))
    pos = runs.select("w", p=pl.int_ranges("a", "b")).explode("p").drop_nulls("p")
    inside = pos.select("w", t=a.heads["t_ms"].gather(pos["p"]))
    ts = pl.Schema({"w": pl.Int64, "t": pl.Float64})
    edge = [pl.DataFrame({"w": range(len(windows)), "t": t}, schema=ts) for t in (b.t0, b.t_end)]
    seq = pl.concat([edge[0], inside.cast(ts), edge[1]]).drop_nulls("t")
    seq = seq.sort("w", maintain_order=True)  # stable: R's time, the lines', the end's
    before = pl.col("t").cum_max().shift(1).over("w")
    found = seq.group_by("w").agg(gap=(pl.col("t") - before).max(), n=pl.len())
    gaps = {w: (g, n) for w, g, n in found.iter_rows()}
    out: list[float | None] = []
    for k in range(len(windows)):
        gap, n = gaps.get(k, (None, 0))
        out.append(None if n < 2 or b.t0[k] is None else max(0.0, float(gap)))
    return out


def _entries(a: AgentLines, windows: list[WindowSpan], b: _Bounds) -> pl.DataFrame:
    """Each (window, session)'s rows, one row each: `i` (the entry, in order), `w` (the
    window), `counted` (before the session's marker), and the line's columns."""
    sessions, lo, hi, stop, w_of = [], [], [], [], []
    for k, w in enumerate(windows):
        starts = {
            s.session: w.req_row if s.announce_row is None else s.announce_row for s in w.sessions
        }
        for s in w.sessions:
            end = b.hi[k] if s.marker_row is None else min(s.marker_row, b.hi[k])
            sessions.append(s.session)
            lo.append(starts[s.session])
            hi.append(b.hi[k])
            stop.append(end)
            w_of.append(k)
    span, counted = a.runs(sessions, lo, hi), a.runs(sessions, lo, stop)
    runs = pl.DataFrame({"w": w_of, "a": span["start"], "b": span["stop"], "c": counted["stop"]})
    runs = runs.with_row_index("i").with_columns(pl.col("i").cast(pl.Int64))
    pos = runs.select("i", "w", "c", p=pl.int_ranges("a", "b")).explode("p").drop_nulls("p")
    columns = a.named.select(
        "row", "seq", "bytes", "line_bytes", "history", "is_update", "kind", "t_ms"
    )
    rows = columns[pos["p"]]
    return pl.concat(
        [pos.select("i", "w", counted=pl.col("p") < pl.col("c")), rows], how="horizontal"
    )


def _by_kind(
    entries: pl.DataFrame,
) -> tuple[dict[int, list[dict[str, object]]], dict[int, int]]:
    """Each entry's history bytes per update kind before its marker (the largest first, then
    by name), and their sum."""
    sums = (
        entries.filter(pl.col("counted") & pl.col("history"))
        .group_by("i", "kind")
        .agg(pl.col("bytes").cast(pl.Int64).sum())
    )
    found: dict[int, list[tuple[str, int]]] = {}
    for i, kind, size in sums.iter_rows():
        found.setdefault(i, []).append((kind, int(size)))
    out: dict[int, list[dict[str, object]]] = {}
    for i, kinds in found.items():
        kinds.sort(key=lambda kv: (-kv[1], kv[0]))
        out[i] = [{"kind": k, "bytes": v} for k, v in kinds]
    return out, {i: sum(v for _, v in kinds) for i, kinds in found.items()}


def _largest(entries: pl.DataFrame) -> dict[int, tuple[int, str, int, int]]:
    """Each entry's longest line (the earliest on a tie): bytes, kind, seq, row."""
    first = pl.col("line_bytes").arg_max()  # the first of equal maxima
    found = entries.group_by("i", maintain_order=True).agg(
        pl.col("line_bytes").get(first),
        pl.col("kind").get(first),
        pl.col("seq").get(first),
        pl.col("row").get(first),
    )
    return {i: (int(n), k, int(s), int(r)) for i, n, k, s, r in found.iter_rows()}


def _quiet_ends(entries: pl.DataFrame, b: _Bounds, o: WeightOptions) -> list[float | None]:
    """Each window's R sent to the first moment a quiet-window client takes the replay for
    over (rules.md `quiet_end_ms`), or None when the response or the trace's end comes first."""
    t0 = pl.DataFrame({"w": range(len(b.t0)), "t0": b.t0}, schema={"w": pl.Int64, "t0": pl.Float64})
    updates = (
        entries.filter(pl.col("is_update"))
        .join(t0, on="w", how="left")
        .select("w", d=pl.col("t_ms") - pl.col("t0"))
        .drop_nulls("d")
        .sort("w", "d")
    )
    after = pl.col("d").shift(-1).over("w")
    found = updates.group_by("w").agg(
        pl.col("d").filter(after - pl.col("d") >= o.quiet_window_ms).first().alias("gap"),
        pl.col("d").last().alias("last"),
    )
    quiet_from = {w: (gap if gap is not None else last) for w, gap, last in found.iter_rows()}
    out: list[float | None] = []
    for k, (start, end_t) in enumerate(zip(b.t0, b.t_end, strict=True)):
        if start is None or end_t is None:
            out.append(None)
            continue
        end = o.quiet_cap_ms
        if k in quiet_from:
            end = min(end, float(quiet_from[k]) + o.quiet_window_ms)
        out.append(end if end < end_t - start else None)
    return out


def _after(
    entries: pl.DataFrame, t0: list[float | None], quiet: list[float | None]
) -> dict[int, int]:
    """Each entry's history updates at or after its window's quiet end (the client decided
    then), for the windows that have one."""
    schema = {"w": pl.Int64, "t0": pl.Float64, "q": pl.Float64}
    q = pl.DataFrame({"w": range(len(quiet)), "t0": t0, "q": quiet}, schema=schema)
    found = (
        entries.filter(pl.col("history"))
        .join(q.drop_nulls("q"), on="w", how="inner")
        .group_by("i")
        .agg(((pl.col("t_ms") - pl.col("t0")) >= pl.col("q")).sum().alias("n"))
    )
    return {i: int(n) for i, n in found.iter_rows()}


def _descendants(sessions: tuple[SessionSpan, ...], root: str) -> list[str]:
    children: dict[str, list[str]] = {}
    for s in sessions:
        if s.parent is not None:
            children.setdefault(s.parent, []).append(s.session)
    out, todo, seen = [], [root], {root}
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in seen:
                seen.add(c)
                out.append(c)
                todo.append(c)
    return out
