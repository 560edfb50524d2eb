"""`explain_replay`'s answer to "is the replay the session?" (docs/rules.md, "Replay
fidelity"): the source it was compared with, the counts, and the first differences, named as
`acp-trace fidelity` names them (their text already redacted as every answer is)."""

from __future__ import annotations

from typing import Any

from acp_trace.analysis.front import Analysis
from acp_trace.analysis.replays import Window
from acp_trace.render.fidelity import describe_source, fidelity_data

SHOWN = 5  # differences an answer lists (the rest: acp-trace fidelity)
COUNTS = ("replay_missing", "replay_extra", "replay_duplicated", "replay_id_changed",
          "replay_reordered", "replay_truncated")  # fmt: skip


def fidelity_said(a: Analysis, w: Window) -> dict[str, Any] | None:
    """The fidelity of the window's own session's row, in a few lines; None without a row."""
    rows = [
        r
        for r in fidelity_data(a, session=w.session, request_id=w.request_id)
        if r["trace"] == w.trace
    ]
    if not rows:
        return None
    r = rows[0]
    if r["source"] is None:
        return {
            "answer": "not compared: the traces hold no earlier replay or prompt turn of this "
            "session (record the live session, or give its earlier recording too)",
            "replayed_messages": r["replay_messages"],
            "duplicated": r["replay_duplicated"],
        }
    where = f"{r['source_trace']} seq {r['source_seq']}"
    counts = {k.removeprefix("replay_"): r[k] for k in COUNTS}
    differs = [f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v]
    answer = (
        "yes: every source message replayed, in order, whole, under its id"
        if not r["differences"]
        else "no: " + ", ".join(differs or [f"{len(r['differences'])} differences"])
    )
    return {
        "answer": answer,
        "source": describe_source(r["source"], r["source_replay"], r["source_turns"], where),
        "source_complete": r["source_complete"],
        "source_messages": r["source_messages"],
        "replayed_messages": r["replay_messages"],
        **counts,
        "first_differences": r["differences"][:SHOWN],
        "differences_left_out": max(0, len(r["differences"]) - SHOWN),
    }
