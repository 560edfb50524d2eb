"""`timeline`: what happened, message by message, as rows (the rows `acp-trace timeline`
prints); the charts are `charts.py`.

A timeline row names the message (method, id, update kind and class, latency, error code,
size) and never holds its contents unless the caller asks (`include_contents`): prompts,
file text and tool output stay out, as in reports. Stderr lines and tap events keep their
text (cut to `TEXT_CHARS`): they are the agent's and the recorder's own words, and they
name the phases of a gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import orjson
import polars as pl

from acp_trace.analysis.phase_patterns import parse_phase
from acp_trace.analysis.replays import Window
from acp_trace.errors import UsageError
from acp_trace.jsonrpc import id_json
from acp_trace.mcpserver.paging import Page, bounded
from acp_trace.mcpserver.store import Loaded

TEXT_CHARS = 300
COLUMNS = ("seq", "t_ms", "src", "kind", "method", "request_method", "id", "session",
           "update_kind", "update_class", "latency_ms", "error_code", "bytes", "truncated",
           "event")  # fmt: skip
DIRECTIONS = {"client": "client->agent", "agent": "agent->client", "stderr": "agent stderr",
              "tap": "tap event"}  # fmt: skip


def timeline(
    loaded: Loaded,
    page: Page,
    *,
    trace: str | None,
    session: str | None,
    replays_only: bool,
    include_contents: bool,
) -> str:
    """The records of the traces (one trace, one session, or the replay windows only), in
    order, each as a compact row; contents only with `include_contents`."""
    a = loaded.analysis
    windows = [w for w in a.facts.windows if w.replaying]
    full = a.timeline.with_columns(pl.Series("in_replay_window", window_mask(a.timeline, windows)))
    tl = full.filter(pl.col("kind") != "header")
    if trace is not None:
        name = loaded.full_name(trace)
        if name is None:
            raise UsageError(f"trace {trace}: no such trace; {loaded.choices()}")
        tl = tl.filter(pl.col("trace") == name)
    if session is not None:
        known = tl["session"].drop_nulls().unique(maintain_order=True).to_list()
        if session not in known:
            shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if known[10:] else "")
            raise UsageError(f"session {session}: no such session; expected one of: {shown}")
        mine = pl.Series(window_mask(a.timeline, [w for w in windows if session in w.sessions]))
        inside = pl.col("row").is_in(pl.Series(np.flatnonzero(mine.to_numpy())))
        tl = tl.filter((pl.col("session") == session) | ((pl.col("src") == "stderr") & inside))
    if replays_only:
        tl = tl.filter(pl.col("in_replay_window"))
    rows = Rows(tl, loaded, include_contents)
    head = {
        "contents": "included" if include_contents else CONTENTS_LEFT_OUT,
        "t_ms": "milliseconds since the trace started",
    }
    return bounded(rows, page, loaded.version, head)


CONTENTS_LEFT_OUT = "left out (include_contents=true adds each message as recorded)"


class Rows(Sequence[dict[str, Any]]):
    """The rows of a timeline, made only for the slice a page reads."""

    def __init__(self, tl: pl.DataFrame, loaded: Loaded, include_contents: bool) -> None:
        self.tl, self.loaded, self.contents = tl, loaded, include_contents

    def __len__(self) -> int:
        return self.tl.height

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, int):
            return self[index : index + 1][0] if index >= 0 else self[len(self) + index]
        start, stop, _ = index.indices(len(self))
        part = self.tl.slice(start, max(0, stop - start))
        return [row(r, self.loaded, self.contents) for r in part.iter_rows(named=True)]


def window_mask(tl: pl.DataFrame, windows: list[Window]) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Per timeline row: inside one of `windows` (from its request to its response, or to
    the end of its trace when it has none)."""
    last = dict(tl.group_by("trace").agg(pl.col("row").max()).iter_rows())
    steps = np.zeros(tl.height + 1, dtype=np.int64)
    for w in windows:
        end = w.end_row if w.end_row is not None else last.get(w.trace, tl.height - 1)
        steps[w.req_row] += 1
        steps[end + 1] -= 1
    return np.cumsum(steps[:-1]) > 0


def row(r: dict[str, Any], loaded: Loaded, include_contents: bool) -> dict[str, Any]:
    """One record as a row, null fields left out."""
    out: dict[str, Any] = {"trace": loaded.names.get(r["trace"], r["trace"])}
    for key in COLUMNS:
        value = r[key]
        if value is None or value is False:
            continue
        out[key] = round(value, 6) if isinstance(value, float) else value
    if "id" in out:
        out["id"] = id_json(out["id"])
    out["src"] = DIRECTIONS.get(r["src"], r["src"])
    if r["in_replay_window"]:
        out["in_replay_window"] = True
    text = r["text"]
    if text is not None and (r["src"] in ("stderr", "tap") or include_contents):
        out["text"] = text if include_contents else text[:TEXT_CHARS]
        phase = parse_phase(text) if r["src"] == "stderr" else None
        if phase is not None:
            out["phase"] = {"name": phase.name, "duration_ms": phase.duration_ms}
    if include_contents and r["msg"] is not None:
        try:
            out["message"] = orjson.loads(r["msg"])
        except orjson.JSONDecodeError:
            out["message"] = r["msg"]
    return out
