"""What a replay carried, this run against the recording (issue 41: drive judges content).

The recorded replay is the whole source of the new one (`fidelity.against`): a replay that
lost history (messages or bytes beyond `--history-drop`), left messages out, renamed them,
became empty, or an agent that answered a lower protocol than recorded is a regression, named
in one line each. Unmarked replays are judged like the others: what they carried counts, not
only how they ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from acp_trace.analysis.front import Analysis
from acp_trace.analysis.replay_fidelity import replay_spans
from acp_trace.fidelity import ReplayFidelity, ReplaySpan, against
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted, percent

DEFAULT_HISTORY_DROP = 10.0  # percent of the recorded history's messages or bytes


@dataclass(frozen=True)
class Pair:
    """One replay on both sides: the recorded row and span, this run's row and span."""

    recorded: dict[str, Any]
    recorded_span: ReplaySpan
    this_run: dict[str, Any]
    this_run_span: ReplaySpan


def pairs(
    base: Analysis, new: Analysis, first: str | None, sessions: dict[str, str], ids: dict[str, str]
) -> list[Pair]:
    """The replays of the recording's first trace matched to this run's by session and request
    id (the recording's translated to the ids this run used)."""
    theirs = {
        (r["session"], r["request_id"]): (r, s)
        for r, s in zip(new.replays.iter_rows(named=True), client_spans(new), strict=True)
    }
    out = []
    for r, s in zip(base.replays.iter_rows(named=True), client_spans(base), strict=True):
        if r["trace"] != first:
            continue
        key = (sessions.get(r["session"], r["session"]), ids.get(r["request_id"], r["request_id"]))
        if key in theirs:
            out.append(Pair(r, s, *theirs[key]))
    return out


def client_spans(a: Analysis) -> list[ReplaySpan]:
    """The replay spans of `a`, a v1 load's taking in the history that came after its response
    (until the client's next request for the session: `load-updates-after-response`): what
    the client got for the load, which is what a drive compares (gemini-cli sends its history
    after the response)."""
    windows = a.facts.windows
    late = {
        (windows[i].req_row, windows[i].session): max(rows) + 1
        for i, rows in a.facts.load_after
        if rows
    }
    out = []
    for s in replay_spans(a):
        stop = late.get((s.req_row, s.session))
        out.append(replace(s, stop_row=stop) if stop is not None else s)
    return out


def content_regressions(
    base: Analysis, new: Analysis, matched: list[Pair], numbers: dict[str, int], drop: float
) -> list[str]:
    """One sentence per replay whose content got worse, and for a lower protocol."""
    out = list(_protocol(base, new))
    for p in matched:
        f = against(base.timeline, p.recorded_span, new.timeline, p.this_run_span)
        out.extend(_judged(p, f, numbers, drop))
    return out


def _protocol(base: Analysis, new: Analysis) -> Iterator[str]:
    def answered(a: Analysis) -> int | None:
        values = a.timeline["protocol"].drop_nulls()
        return int(values[0]) if len(values) else None

    recorded, now = answered(base), answered(new)
    if recorded is not None and now is not None and now < recorded:
        yield f"the agent answered protocol {now}; the recording negotiated protocol {recorded}"


def _judged(p: Pair, f: ReplayFidelity, numbers: dict[str, int], drop: float) -> Iterator[str]:
    r = p.this_run
    n = numbers.get(r["request_id"])  # the table's request_id is the id's JSON text, as id_key
    where = f"{_numbered(n)} {r['method']} on {r['session']}"
    was, now = f.source_messages or 0, f.replay_messages
    was_bytes, now_bytes = p.recorded["history_bytes"] or 0, r["history_bytes"] or 0
    if (p.recorded["history_updates"] or 0) > 0 and (r["history_updates"] or 0) == 0:
        yield f"{where}: the replay became empty (the recording replayed {counted(was, 'message')})"
        return
    if _dropped(was, now, drop) or _dropped(was_bytes, now_bytes, drop):
        yield (
            f"{where}: history {count(was)} -> {count(now)} messages "
            f"({percent(_change(was, now))}), {count(was_bytes)} -> {count(now_bytes)} bytes "
            f"({percent(_change(was_bytes, now_bytes))}); more than --history-drop {drop:g}% less"
        )
    if f.replay_missing:
        yield f"{where}: {count(f.replay_missing)} of the recording's {count(was)} messages " + (
            f"missing{_first(f, 'missing')}"
        )
    if f.replay_id_changed:
        yield (
            f"{where}: {count(f.replay_id_changed)} messages replayed under other ids than "
            f"recorded{_first(f, 'id_changed')}"
        )


def _dropped(was: int, now: int, drop: float) -> bool:
    return was > 0 and (was - now) / was * 100 > drop


def _change(was: int, now: int) -> float:
    return (now - was) / was * 100 if was else 0.0


def _first(f: ReplayFidelity, what: str) -> str:
    d = next((d for d in f.differences if d.what == what), None)
    if d is None:
        return ""
    ident = f" {json_text(d.source_id)}" if d.source_id is not None else ""
    renamed = f" -> {json_text(d.replay_id)}" if what == "id_changed" else ""
    text = d.text if len(d.text) <= 40 else d.text[:39] + "…"
    return (
        f" (the first: {d.kind}{ident}{renamed} at recorded seq {d.source_seq}: {json_text(text)})"
    )


def _numbered(n: object) -> str:
    return f"request {n}" if isinstance(n, int) else "a replay"


__all__ = ["DEFAULT_HISTORY_DROP", "content_regressions", "pairs"]
