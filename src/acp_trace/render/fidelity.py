"""`acp-trace fidelity`: for each replay, the source it was compared with and every message
that differs (rules.md "Replay fidelity"), as text for a person or JSON for a program."""

from __future__ import annotations

from typing import Any

from acp_trace.analysis.front import Analysis
from acp_trace.fidelity import FIELDS, Difference, ReplayFidelity
from acp_trace.fidelity.compare import id_at
from acp_trace.jsonrpc import json_text
from acp_trace.quantities import count, counted
from acp_trace.render.escape import terminal

# how each kind of difference is said in the text output
_SAID = {
    "missing": "missing",
    "extra": "extra",
    "duplicated": "repeated",
    "id_changed": "new id",
    "prompt_id_changed": "prompt id",
    "reordered": "reordered",
    "truncated": "cut",
    "chunk_before_message": "early chunk",
}


def fidelity_data(
    a: Analysis, *, session: str | None = None, request_id: str | None = None
) -> list[dict[str, Any]]:
    """One object per replay row (chosen by session and request id when given): who, the
    fidelity fields, the source, and the differences in the order of `WHATS`."""
    out = []
    seqs = a.timeline["seq"]
    for row, f in zip(a.replays.iter_rows(named=True), a.fidelity, strict=True):
        if session is not None and row["session"] != session:
            continue
        if request_id is not None and row["request_id"] != request_id:
            continue
        out.append(_replay(row, f, seqs[f.span.req_row]))
    return out


def _replay(row: dict[str, Any], f: ReplayFidelity, seq: int | None) -> dict[str, Any]:
    keys = ("trace", "session", "parent_session", "request_id", "method", "agent", "outcome")
    data = {k: row[k] for k in keys}
    data["seq"] = seq
    data.update({name: row[name] for name in FIELDS})
    data["source_trace"], data["source_seq"] = f.source_trace, f.source_seq
    data["source_turns"] = f.source_turns
    data["source_replay"] = f.source_replay
    data["replay_messages"] = f.replay_messages
    data["differences"] = [_difference(d) for d in f.differences]  # in the order of WHATS
    return data


def _difference(d: Difference) -> dict[str, Any]:
    return {
        "what": d.what,
        "kind": d.kind,
        "source_id": d.source_id,
        "replay_id": d.replay_id,
        "source_trace": d.source_trace,
        "source_seq": d.source_seq,
        "replay_seq": d.replay_seq,
        "source_bytes": d.source_bytes,
        "replay_bytes": d.replay_bytes,
        "text": d.text,
    }


def format_fidelity(data: list[dict[str, Any]], *, limit: int | None = None) -> str:
    """Each replay: who, against what, the counts, then a line per difference (at most
    `limit` per replay, the rest counted). Every value from a trace is escaped."""
    if not data:
        return "no replay to compare\n"
    return "\n".join(_replay_text(r, limit) for r in data)


def _replay_text(r: dict[str, Any], limit: int | None) -> str:
    who = (
        f"{terminal(r['method'] or '?')} id {terminal(str(r['request_id']))} (seq {r['seq']}) on session "
        f"{terminal(r['session'])} ({terminal(r['agent'] or 'unknown agent')}, {r['outcome']})"
    )
    lines = [f"{terminal(r['trace'])}: {who}"]
    lines.append(f"  {_source_line(r)}")
    if r["source"] is not None:
        lines.append("  " + _counts_line(r))
    diffs = r["differences"]
    shown = diffs if limit is None else diffs[:limit]
    lines.extend("    " + _difference_line(d) for d in shown)
    if len(shown) < len(diffs):
        lines.append(f"    … {counted(len(diffs) - len(shown), 'more difference')} (--limit)")
    if r["source"] is not None and not diffs:
        lines.append("    every source message replayed, in order, whole, under its id")
    return "\n".join(lines) + "\n"


def _source_line(r: dict[str, Any]) -> str:
    replayed = counted(r["replay_messages"], "message")
    if r["source"] is None:
        return (
            f"source: none in the traces given (no earlier replay or prompt turn of the session); "
            f"replayed {replayed}"
        )
    where = f"{terminal(r['source_trace'])} seq {r['source_seq']}"
    what = describe_source(r["source"], r["source_replay"], r["source_turns"], where)
    complete = (
        "complete: the session's session/new is in the traces"
        if r["source_complete"]
        else "may lack history from before the traces"
    )
    return (
        f"source: {what} ({complete}): "
        f"{counted(r['source_messages'], 'message')}; replayed {replayed}"
    )


def describe_source(source: str, from_replay: bool | None, turns: int | None, where: str) -> str:
    """What a replay was compared with, as a person reads it: `the earlier replay at WHERE`,
    `... and the 2 prompt turns since`, or `2 prompt turns from WHERE`."""
    turns_text = counted(turns or 0, "prompt turn")
    if source == "replay":
        return f"the earlier replay at {where}"
    if from_replay:
        return f"the earlier replay at {where} and the {turns_text} since"
    return f"{turns_text} from {where}"


def _counts_line(r: dict[str, Any]) -> str:
    extra = "n/a" if r["replay_extra"] is None else count(r["replay_extra"])
    return (
        f"missing {count(r['replay_missing'])} · extra {extra} · "
        f"repeated {count(r['replay_duplicated'])} · new ids {count(r['replay_id_changed'])} · "
        f"reordered {count(r['replay_reordered'])} · cut {count(r['replay_truncated'])} "
        f"({counted(r['replay_truncated_bytes'], 'byte')} lost)"
    )


def _difference_line(d: dict[str, Any]) -> str:
    parts = [f"{_SAID[d['what']]:<11}", f"{d['kind']:<15}"]
    if d["source_seq"] is not None or d["source_id"] is not None:
        parts.append(f"source {_at(d['source_id'], d['source_seq'], d['source_bytes'])}")
    if d["replay_seq"] is not None:
        parts.append(f"replayed {_at(d['replay_id'], d['replay_seq'], d['replay_bytes'])}")
    text = d["text"] if len(d["text"]) <= 60 else d["text"][:59] + "…"
    return "  ".join(parts) + f"  {terminal(json_text(text))}"


def _at(ident: Any, seq: int | None, size: int | None) -> str:
    named = terminal(id_at(ident, seq))
    return named if size is None else f"{named} ({counted(size, 'byte')})"
