"""The replays of traces in the plainest Python: a reference for the analyzer benchmark.

One pass per file, a line at a time, with the json module and dicts: pair responses with
requests by id, open a window for each replaying request (a v2 `session/resume` with a
`replayFrom` cursor or a v1 `session/load`), count the session's history updates until its
`replay_complete`, and judge the outcome by the table of rules.md when the response comes.
Children, marker-meta and the checks are left out (the benchmark's traces have none).

    python benchmarks/plain_replays.py TRACE...      # prints one JSON object per replay
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HISTORY = frozenset(
    [
        "user_message",
        "agent_message",
        "agent_thought",
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "plan_update",
        "plan_removed",
        "terminal_update",
        "terminal_output_chunk",
        "compaction_update",
        "compaction_summary_chunk",
        "subagent_update",
        "session_message",
        "session_message_chunk",
    ]
)


def replays(paths: list[str]) -> Iterator[dict[str, Any]]:
    """Every replay of every trace, in order of the requests."""
    for path in paths:
        yield from _replays_of_file(path)


def _replays_of_file(path: str) -> Iterator[dict[str, Any]]:
    state = _State(path)
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("seq") is not None:
                state.record(rec)
    yield from state.finish()


class _State:
    def __init__(self, path: str) -> None:
        self.path = path
        self.protocol: int | None = None
        self.pending: dict[tuple[str, str], dict[str, Any]] = {}
        self.windows: list[dict[str, Any]] = []
        self.ended = False

    def record(self, rec: dict[str, Any]) -> None:
        src, msg, t = rec.get("src"), rec.get("msg"), rec.get("t_ns")
        if src == "tap" and rec.get("event") == "exit":
            for w in self.open():
                w["end"], w["end_t"] = "connection", t
            self.ended = True
        if self.ended or not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return
        if "method" in msg and "id" in msg:
            self.request(src, msg, t)
        elif "id" in msg:
            self.response(src, msg, t)
        elif msg.get("method") == "session/update" and src == "agent":
            self.update(msg, rec, t)

    def open(self) -> list[dict[str, Any]]:
        return [w for w in self.windows if w["end"] is None]

    def request(self, src: Any, msg: dict[str, Any], t: int | None) -> None:
        params: dict[str, Any] = msg["params"] if isinstance(msg.get("params"), dict) else {}
        req = {"method": msg["method"], "params": params, "t": t, "window": None}
        self.pending[(src, json.dumps(msg["id"]))] = req
        method, session = msg["method"], params.get("sessionId")
        if src != "client" or not isinstance(session, str):
            return
        load = method == "session/load"
        cursor = params.get("replayFrom")
        if load or (method == "session/resume" and self.protocol != 1 and cursor is not None):
            w = {
                "trace": self.path,
                "session": session,
                "method": method,
                "request_id": json.dumps(msg["id"]),
                "t": t,
                "end": None,
                "end_t": None,
                "code": None,
                "marker_t": None,
                "last_history_t": None,
                "history_updates": 0,
            }
            req["window"] = w
            self.windows.append(w)

    def response(self, src: Any, msg: dict[str, Any], t: int | None) -> None:
        other = "agent" if src == "client" else "client"
        req = self.pending.pop((other, json.dumps(msg["id"])), None)
        if req is None:
            return
        result = msg.get("result")
        if req["method"] == "initialize" and isinstance(result, dict):
            version = result.get("protocolVersion")
            self.protocol = version if isinstance(version, int) else None
        w = req["window"]
        if w is not None and src == "agent":
            w["end"], w["end_t"] = ("error", t) if "error" in msg else ("response", t)
            error = msg.get("error")
            w["code"] = error.get("code") if isinstance(error, dict) else None

    def update(self, msg: dict[str, Any], rec: dict[str, Any], t: int | None) -> None:
        params = msg.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("update"), dict):
            return
        session, kind = params.get("sessionId"), params["update"].get("sessionUpdate")
        for w in self.open():
            if w["session"] != session or w["marker_t"] is not None:
                continue
            if kind == "replay_complete":
                w["marker_t"] = t
            elif kind in HISTORY:
                w["history_updates"] += 1
                w["last_history_t"] = t

    def finish(self) -> Iterator[dict[str, Any]]:
        for w in self.windows:
            yield {
                "trace": w["trace"],
                "session": w["session"],
                "request_id": w["request_id"],
                "outcome": outcome(w),
                "marker_ms": _ms(w["marker_t"], w["t"]),
                "last_history_ms": _ms(w["last_history_t"], w["t"]),
                "response_ms": _ms(w["end_t"], w["t"]) if w["end"] != "connection" else None,
                "history_updates": w["history_updates"],
            }


def outcome(w: dict[str, Any]) -> str:
    """The outcome table of rules.md, for a parent session."""
    marked = w["marker_t"] is not None
    if w["end"] is None:
        return "open"
    if w["method"] == "session/load":
        return "v1_loaded" if w["end"] == "response" else "v1_failed"
    if w["end"] == "response":
        return "complete" if marked else "unmarked"
    if marked:
        return "complete_failed"
    return "rejected" if w["end"] == "error" and w["code"] == -32602 else "truncated"


def _ms(t: int | None, start: int | None) -> float | None:
    return None if t is None or start is None else (t - start) / 1e6


def trace_files(args: list[str]) -> list[str]:
    """Files named, and the `*.jsonl` files under directories."""
    out: list[str] = []
    for arg in args:
        path = Path(arg)
        out.extend(sorted(map(str, path.rglob("*.jsonl"))) if path.is_dir() else [arg])
    return out


if __name__ == "__main__":
    for row in replays(trace_files(sys.argv[1:])):
        print(json.dumps(row))
