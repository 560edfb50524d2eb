"""The turn pass: every prompt turn followed through its updates and response.

A prompt turn runs from the `session/prompt` request to its v1 response, or to the v2 idle
`state_update` that ends it (a resume's state snapshot is not a turn end). Its phases: the first
agent chunk, the acceptance signal (claude-agent-acp's session-materialization update), the end.
A chunk inside a replay window of its session (a load or a resume with a cursor, from its
request to its response) is replayed history, never a turn's output.
`latency.turns_table` turns the facts into the public table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from acp_trace.analysis.replays import Facts
from acp_trace.jsonrpc import loads

AGENT_OUTPUT_KINDS = (
    "agent_message_chunk",
    "agent_message",
    "agent_thought_chunk",
    "agent_thought",
)


@dataclass
class Turn:
    """One prompt turn and the rows that mark its phases."""

    trace: str
    session: str
    protocol: int | None
    req_row: int
    first_chunk_row: int | None = None
    acceptance_rows: list[int] = field(default_factory=list)
    end_row: int | None = None
    response_row: int | None = None
    stop_reason: str | None = None
    cancelled_with_uuid: bool = False
    open_until: int | None = None  # the row where it stopped being its session's open turn


@dataclass
class TurnFacts:
    """All prompt turns of a timeline plus acceptance updates that came outside any turn."""

    turns: list[Turn] = field(default_factory=list)
    stray_acceptances: list[tuple[str, str, int]] = field(default_factory=list)
    acceptance_info: list[tuple[str, str, int]] = field(default_factory=list)


_TURN_COLUMNS = (
    "row",
    "trace",
    "src",
    "kind",
    "session",
    "update_kind",
    "peer_row",
    "protocol",
    "stop_reason",
    "state",
    "accepted",
)


def collect_turns(tl: pl.DataFrame, facts: Facts) -> TurnFacts:
    """Follow every prompt turn of every trace through its updates and response.

    The agent's output chunks change no state: a turn's first chunk is found in polars (the
    first chunk of its session after its request, while it is open), and the walk here
    visits only the rows that open, answer, accept or end a turn. What those rows say
    (`stop_reason`, `state`, `accepted`) are the reader's columns; a message is parsed only
    for what no column holds (a cancelled turn's `_meta`, an acceptance's title)."""
    out = TurnFacts()
    resume_spans = _resume_spans(facts)
    kind, uk = pl.col("kind"), pl.col("update_kind")
    output = (kind == "notification") & (pl.col("src") == "agent") & uk.is_in(AGENT_OUTPUT_KINDS)
    base = tl.lazy().filter(pl.col("session").is_not_null())
    is_output = output.fill_null(False)
    walked = (  # narrow columns first: filtering the whole table would copy every message
        (pl.col("method") == "session/prompt")
        | (pl.col("request_method") == "session/prompt")
        | uk.is_in(["session_info_update", "state_update"])
        | (uk.is_in(AGENT_OUTPUT_KINDS) & ~is_output)
    )
    walk = base.filter(walked).select(_TURN_COLUMNS).collect()
    # the chunks (most of a replayed history): their row and a hash of (trace, session) only
    chunks = _outside_replays(base.filter(is_output).select(_KEY, "row").collect(), tl, facts)
    msgs = tl["msg"]
    open_turns: dict[tuple[str, str], Turn] = {}
    by_req: dict[int, Turn] = {}
    for row, trace, src, kind_, session, uk_, peer, protocol, *said in walk.iter_rows():
        key = (trace, session)
        if kind_ == "request" and src == "client":
            turn = Turn(trace, session, protocol, row)
            _close(open_turns, key, row)
            open_turns[key] = turn
            by_req[row] = turn
            out.turns.append(turn)
        elif kind_ in ("response", "error") and peer in by_req:
            _answer(by_req[peer], row, kind_, said[0], msgs, open_turns)
        elif kind_ == "notification" and src == "agent":
            _turn_update(out, open_turns, key, row, uk_, said, msgs, resume_spans)
    _first_chunks(out.turns, chunks, tl)
    return out


def _close(open_turns: dict[tuple[str, str], Turn], key: tuple[str, str], row: int) -> None:
    """The open turn of `key` (if any) stops being open at `row`."""
    turn = open_turns.pop(key, None)
    if turn is not None:
        turn.open_until = row


_KEY = pl.struct("trace", "session").hash(seed=14).alias("key")


def _first_chunks(turns: list[Turn], chunks: pl.DataFrame, tl: pl.DataFrame) -> None:
    """Each turn's first agent output chunk: the first chunk of its trace and session after
    its request, if it comes before the turn stopped being open (as-of join, forward, by a
    64-bit hash of trace and session: 16 bytes a chunk instead of two strings). A chunk found
    is checked against the turn's trace and session, so a hash collision costs time, never
    a wrong row: then the join runs again by the strings themselves."""
    if not turns or not chunks.height:
        return
    frame = pl.DataFrame(
        {
            "trace": [t.trace for t in turns],
            "session": [t.session for t in turns],
            "req_row": [t.req_row for t in turns],
        },
        schema={"trace": pl.String, "session": pl.String, "req_row": chunks.schema["row"]},
    )
    found = _join_forward(frame.with_columns(_KEY), chunks, ["key"])
    where = tl.select("trace", "session")
    hits = [c for c in found if c is not None]
    seen = where[hits] if hits else where.clear()
    expected = [(t.trace, t.session) for t, c in zip(turns, found, strict=True) if c is not None]
    if list(seen.iter_rows()) != expected:  # a collision of the hash: by the strings
        strings = tl.lazy().select("trace", "session", "row").collect()[chunks["row"]]
        found = _join_forward(frame, strings, ["trace", "session"])
    for turn, chunk in zip(turns, found, strict=True):
        if chunk is not None and (turn.open_until is None or chunk < turn.open_until):
            turn.first_chunk_row = chunk


def _outside_replays(chunks: pl.DataFrame, tl: pl.DataFrame, facts: Facts) -> pl.DataFrame:
    """The chunks that lie inside no replay window of their session (a covered child's from
    its announcement): replayed history is no turn's output. Joined by the chunks' hash of
    (trace, session) when no session of the timeline shares a window's hash with another,
    else by the strings (a collision costs time, never a wrong chunk)."""
    spans = _replay_spans(facts)
    if not spans or not chunks.height:
        return chunks
    windows = _windows_frame(spans, chunks.schema["row"])
    pairs = tl.lazy().select("trace", "session").unique().with_columns(_KEY).collect()
    owners = pairs.join(windows.select("key").unique(), on="key", how="semi")
    own = windows.select("trace", "session").unique()
    if not owners.join(own, on=["trace", "session"], how="anti", nulls_equal=True).height:
        inside = _rows_inside(chunks, windows.drop("trace", "session"), ["key"])
    else:
        strings = tl.select("trace", "session")[chunks["row"]].with_columns(chunks["row"])
        inside = _rows_inside(strings, windows.drop("key"), ["trace", "session"])
    return chunks.filter(~pl.col("row").is_in(inside.implode()))


def _windows_frame(spans: list[tuple[str, str, int, int]], row_type: Any) -> pl.DataFrame:
    """The replay windows of each trace and session, overlapping ones merged, with `_KEY`."""
    by_session: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for trace, session, start, end in spans:
        by_session.setdefault((trace, session), []).append((start, end))
    table = [(t, s, a, b) for (t, s), ss in by_session.items() for a, b in _merge(ss)]
    schema: dict[str, Any] = {
        "trace": pl.String,
        "session": pl.String,
        "start": row_type,
        "end": pl.Int64,
    }
    return pl.DataFrame(table, schema=schema, orient="row").with_columns(_KEY).sort("start")


def _rows_inside(rows: pl.DataFrame, windows: pl.DataFrame, by: list[str]) -> pl.Series:
    """The `row`s of `rows` inside a window of the same `by`."""
    return rows.join_asof(
        windows,
        left_on="row",
        right_on="start",
        by=by,
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    ).filter(pl.col("row") < pl.col("end"))["row"]


def _replay_spans(facts: Facts) -> list[tuple[str, str, int, int]]:
    """(trace, session, start row, end row) of every replay window and session it covers."""
    out = []
    for w in facts.windows:
        if not w.replaying:
            continue
        end = w.end_row if w.end_row is not None else 2**62
        for stats in w.sessions.values():
            start = w.req_row if stats.announce_row is None else stats.announce_row
            out.append((w.trace, stats.session, start, end))
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping (start, end) spans joined, in order of start."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _join_forward(frame: pl.DataFrame, chunks: pl.DataFrame, by: list[str]) -> list[int | None]:
    """For each row of `frame`, the first chunk row after its `req_row` with the same `by`."""
    return frame.join_asof(
        chunks.rename({"row": "chunk"}),
        left_on="req_row",
        right_on="chunk",
        by=by,
        strategy="forward",
        allow_exact_matches=False,
        check_sortedness=False,  # both in row order: the timeline's
    )["chunk"].to_list()


def _answer(
    turn: Turn,
    row: int,
    kind: str,
    stop: str | None,
    msgs: pl.Series,
    open_turns: dict[tuple[str, str], Turn],
) -> None:
    turn.response_row = row
    key = (turn.trace, turn.session)
    if turn.protocol != 2 or kind == "error":
        turn.end_row = row
        # `stop_reason` is `result.stopReason` (a string); without one, the result decides
        result = _part(msgs[row], "result") if stop is None or stop == "cancelled" else None
        if stop is not None or isinstance(result, dict):
            turn.stop_reason = stop
            turn.cancelled_with_uuid = isinstance(result, dict) and _cancelled_with_uuid(result)
        if open_turns.get(key) is turn:
            _close(open_turns, key, row)


def _turn_update(
    out: TurnFacts,
    open_turns: dict[tuple[str, str], Turn],
    key: tuple[str, str],
    row: int,
    uk: str | None,
    said: list[Any],
    msgs: pl.Series,
    resume_spans: dict[tuple[str, str], list[tuple[int, int]]],
) -> None:
    """A session_info_update or a state update (no output chunk: those are folded)."""
    turn = open_turns.get(key)
    stop, state, accepted = said
    if uk == "session_info_update":
        if not accepted:
            return
        update = _update(msgs[row])
        if "title" in update or "updatedAt" in update:
            out.acceptance_info.append((key[0], key[1], row))
        if turn is None:
            out.stray_acceptances.append((key[0], key[1], row))
        else:
            turn.acceptance_rows.append(row)
        return
    if turn is None or state != "idle" or _inside(resume_spans.get(key, []), row):
        return
    turn.end_row = row
    turn.stop_reason = stop
    turn.cancelled_with_uuid = stop == "cancelled" and _cancelled_with_uuid(_update(msgs[row]))
    _close(open_turns, key, row)


def _cancelled_with_uuid(holder: dict[str, Any]) -> bool:
    if holder.get("stopReason") != "cancelled":
        return False
    meta = holder.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    return isinstance(claude, dict) and "assistantMessageUuid" in claude


def _update(text: str | None) -> dict[str, Any]:
    params = _part(text, "params")
    update = params.get("update") if isinstance(params, dict) else None
    return update if isinstance(update, dict) else {}


def _part(text: str | None, name: str) -> Any:
    msg = loads(text) if text else {}
    return msg.get(name) if isinstance(msg, dict) else None


def _resume_spans(facts: Facts) -> dict[tuple[str, str], list[tuple[int, int]]]:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for w in facts.windows:
        if w.method == "session/resume":
            end = w.end_row if w.end_row is not None else 2**62
            spans.setdefault((w.trace, w.session), []).append((w.req_row, end))
    return spans


def _inside(spans: list[tuple[int, int]], row: int) -> bool:
    return any(start < row < end for start, end in spans)
