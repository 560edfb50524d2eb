"""The weight fields of each replay row (rules.md "Replay weight, client limits and
deadlines"): bytes by kind, the largest line, the children's bytes, the longest silence and
what a quiet-window client would have made of the replay. One walk over the windows, each a
few slices of sorted arrays: linear in the trace."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from acp_trace.weight.lines import line_rows
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


class _Arrays:
    """The agent's lines as arrays: all of them by row (for silences), and those naming a
    session sorted by (session, row) so that one session's rows in a range are one slice."""

    def __init__(self, tl: pl.DataFrame, lines: pl.DataFrame) -> None:
        self.t = tl["t_ms"].fill_null(np.nan).to_numpy()
        agent = lines.filter(pl.col("src") == "agent")
        heads = agent.filter(pl.col("head"))
        self.head_rows = heads["row"].to_numpy()
        named = agent.filter(pl.col("session").is_not_null())
        codes, sessions = _codes(named["session"])
        self.codes = {s: i for i, s in enumerate(sessions)}  # session -> code
        order = np.lexsort((named["row"].to_numpy(), codes))
        self.key = (codes * (len(self.t) + 1) + named["row"].to_numpy())[order]
        self.row = named["row"].to_numpy()[order]
        self.seq = named["seq"].to_numpy()[order]
        self.bytes = named["bytes"].to_numpy()[order]
        self.line_bytes = named["line_bytes"].to_numpy()[order]
        self.history = named["history"].to_numpy()[order]
        self.update = named["is_update"].to_numpy()[order]
        kinds, self.kind_names = _codes(named["kind"])
        self.kind = kinds[order]
        self.n = len(self.t)

    def rows_of(self, session: str, lo: int, hi: int) -> slice:
        """The slice of `session`'s rows strictly between rows `lo` and `hi`."""
        code = self.codes.get(session)
        if code is None:
            return slice(0, 0)
        base = code * (self.n + 1)
        start = int(np.searchsorted(self.key, base + lo, side="right"))
        stop = int(np.searchsorted(self.key, base + hi, side="left"))
        return slice(start, max(start, stop))


def _codes(values: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Each value's code (its place among the distinct values) and the distinct values."""
    names = values.unique(maintain_order=True)
    table = pl.DataFrame({"v": names, "code": np.arange(len(names), dtype=np.int64)})
    codes = pl.DataFrame({"v": values}).join(table, on="v", how="left", maintain_order="left")
    return codes["code"].cast(pl.Int64).to_numpy(), names.to_list()


def replay_weights(
    tl: pl.DataFrame,
    windows: list[WindowSpan],
    options: WeightOptions,
    lines: pl.DataFrame | None = None,
) -> list[ReplayWeight]:
    """One ReplayWeight per session of each window, in order (`lines`: `line_rows(tl)`,
    when the caller has it)."""
    arrays = _Arrays(tl, line_rows(tl) if lines is None else lines)
    ends = trace_ends(tl)
    out: list[ReplayWeight] = []
    for w in windows:
        out.extend(_window(arrays, ends, w, options))
    return out


def silences(
    tl: pl.DataFrame, windows: list[WindowSpan], lines: pl.DataFrame | None = None
) -> list[float | None]:
    """The longest silence of each window (for `session/new` windows, which have no row)."""
    arrays = _Arrays(tl, line_rows(tl) if lines is None else lines)
    ends = trace_ends(tl)
    return [_silence(arrays, ends, w) for w in windows]


def trace_ends(tl: pl.DataFrame) -> dict[str, tuple[int, float]]:
    """Per trace: its last row and its latest time (NaN when untimed)."""
    ends = tl.group_by("trace").agg(pl.col("row").max(), pl.col("t_ms").max())
    return {t: (int(r), float("nan") if m is None else m) for t, r, m in ends.iter_rows()}


def _bounds(a: _Arrays, ends: dict[str, tuple[int, float]], w: WindowSpan) -> tuple[int, float]:
    """The row the window stops before, and its end time (response, connection or trace end)."""
    last_row, last_t = ends[w.trace]
    if w.end_row is None:
        return last_row + 1, last_t
    return w.end_row, float(a.t[w.end_row])


def _silence(a: _Arrays, ends: dict[str, tuple[int, float]], w: WindowSpan) -> float | None:
    hi, t_end = _bounds(a, ends, w)
    t0 = float(a.t[w.req_row])
    lo_i = int(np.searchsorted(a.head_rows, w.req_row, side="right"))
    hi_i = int(np.searchsorted(a.head_rows, hi, side="left"))
    times = a.t[a.head_rows[lo_i:hi_i]]
    seq = np.concatenate(([t0], times[~np.isnan(times)], [t_end]))
    seq = seq[~np.isnan(seq)]
    if len(seq) < 2 or np.isnan(t0):
        return None
    running = np.maximum.accumulate(seq)  # time that goes backwards is no silence
    return float(max(0.0, float(np.max(seq[1:] - running[:-1]))))


def _window(
    a: _Arrays, ends: dict[str, tuple[int, float]], w: WindowSpan, o: WeightOptions
) -> list[ReplayWeight]:
    hi, t_end = _bounds(a, ends, w)
    t0 = float(a.t[w.req_row])
    silence = _silence(a, ends, w)
    starts = {
        s.session: s.announce_row if s.announce_row is not None else w.req_row for s in w.sessions
    }
    quiet = _quiet_end(a, w, starts, hi, t0, t_end, o)
    own: dict[str, int] = {}
    rows = []
    for s in w.sessions:
        span = a.rows_of(s.session, starts[s.session], hi)
        stop = s.marker_row if s.marker_row is not None else hi
        counted = a.rows_of(s.session, starts[s.session], min(stop, hi))
        by_kind = _by_kind(a, counted)
        own[s.session] = sum(int(d["bytes"]) for d in by_kind)  # type: ignore[call-overload]
        largest = _largest(a, span)
        after = None
        if quiet is not None:
            hist = a.history[span]
            times = a.t[a.row[span]][hist] - t0
            after = int(np.count_nonzero(times >= quiet))  # the client decided then
        rows.append((s, by_kind, largest, after))
    out = []
    for s, by_kind, largest, after in rows:
        children = sum(own[c] for c in _descendants(w.sessions, s.session))
        out.append(ReplayWeight(by_kind, *largest[:3], children, silence, quiet, after, largest[3]))
    return out


def _by_kind(a: _Arrays, counted: slice) -> list[dict[str, object]]:
    """History bytes per update kind over a slice: the largest first, then by name."""
    hist = a.history[counted]
    kinds, weights = a.kind[counted][hist], a.bytes[counted][hist]
    if len(kinds) == 0:
        return []
    sums = np.zeros(len(a.kind_names), dtype=np.int64)
    np.add.at(sums, kinds, weights.astype(np.int64))  # exact at any size
    found = [(a.kind_names[k], int(sums[k])) for k in np.flatnonzero(np.bincount(kinds))]
    found.sort(key=lambda kv: (-kv[1], kv[0]))
    return [{"kind": k, "bytes": b} for k, b in found]


def _largest(a: _Arrays, span: slice) -> tuple[int | None, str | None, int | None, int | None]:
    """The longest line on the session in the slice (the earliest on a tie): bytes, kind,
    seq, row."""
    sizes = a.line_bytes[span]
    if len(sizes) == 0:
        return None, None, None, None
    i = span.start + int(np.argmax(sizes))  # argmax: the first of equal maxima
    return int(a.line_bytes[i]), a.kind_names[a.kind[i]], int(a.seq[i]), int(a.row[i])


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


def _quiet_end(
    a: _Arrays,
    w: WindowSpan,
    starts: dict[str, int],
    hi: int,
    t0: float,
    t_end: float,
    o: WeightOptions,
) -> float | None:
    """R sent to the first moment a quiet-window client takes the replay for over (rules.md
    `quiet_end_ms`), or None when the response or the trace's end comes first."""
    if np.isnan(t0) or np.isnan(t_end):
        return None
    times = []
    for s in w.sessions:
        span = a.rows_of(s.session, starts[s.session], hi)
        times.append(a.t[a.row[span]][a.update[span]])
    ut = np.concatenate(times) if times else np.empty(0)
    ut = np.maximum.accumulate(np.sort(ut[~np.isnan(ut)] - t0)) if len(ut) else ut
    end = o.quiet_cap_ms
    if len(ut):
        gaps = np.flatnonzero(np.diff(ut) >= o.quiet_window_ms)
        quiet_from = ut[gaps[0]] if len(gaps) else ut[-1]
        end = min(end, float(quiet_from) + o.quiet_window_ms)
    return end if end < t_end - t0 else None
