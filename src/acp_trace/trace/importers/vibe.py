"""mistral-vibe's own ACP log (3.0.3, `VIBE_ACP_LOGGING_ENABLED=1`; vibe/acp/acp_logger.py).

`~/.vibe/logs/acp/messages.jsonl`, rotated by logging's RotatingFileHandler at 1,000,000 bytes
into `messages.jsonl.1` to `.3` (`.3` the oldest). One line per message the agent received
or sent: `{"ts": datetime.now(UTC).isoformat(), "dir": "in"|"out", "msg": the parsed message
written again by json.dumps, "session"?: a session id the logger guessed}`.

What follows for the import (docs/importing.md):

- `in` is what the agent received (`src` client), `out` what it sent (`src` agent);
- the log spans every agent process that wrote to it: a trace starts at each `initialize` the
  agent received (`FILE#1`, `FILE#2`, ...);
- given `messages.jsonl` (or `FILE.jsonl`), its older siblings `.3`, `.2`, `.1` are read first,
  in that order, as the one log they were;
- `t_ns` = (`ts` - the connection's first `ts`) in ns (microseconds, timing `source`);
  `started_at` is that first `ts`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acp_trace.trace.importers._common import TraceBuilder, Unparsed, ndjson

DIRS = {"in": "client", "out": "agent"}
BACKUPS = 3  # BACKUP_COUNT in acp_logger.py
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_line(value: Any) -> bool:
    """True for a log line: `ts` text, `dir` in or out, and a `msg`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("dir"), str)  # a list or an object is no direction (unhashable)
        and value["dir"] in DIRS
        and isinstance(value.get("ts"), str)
        and "msg" in value
    )


def rotated(path: Path, text: str) -> list[tuple[str, str]]:
    """(name, text) of the log's files, oldest first: the older siblings of `path` that exist
    (`path.3` .. `path.1`), then `path` itself."""
    older = []
    for n in range(BACKUPS, 0, -1):
        sibling = path.with_name(f"{path.name}.{n}")
        try:
            older.append((str(sibling), sibling.read_bytes().decode("utf-8", "surrogateescape")))
        except OSError:
            continue
    return [*older, (str(path), text)]


def _ns(stamp: Any) -> int | None:
    """An ISO 8601 time as nanoseconds since the epoch (microsecond precision), or None."""
    if not isinstance(stamp, str):
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    delta = when - EPOCH  # exact, where a float timestamp rounds
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def convert(path: Path, text: str) -> list[TraceBuilder]:
    """Convert a vibe ACP log (with its rotated siblings) into one trace per connection."""
    files = rotated(path, text) if path.name.endswith(".jsonl") else [(str(path), text)]
    traces: list[TraceBuilder] = []
    current: TraceBuilder | None = None
    t0: int | None = None
    for name, body in files:
        where = "" if name == str(path) else f"{Path(name).name}: "
        for number, value in ndjson(body):
            if isinstance(value, Unparsed) or not is_line(value):
                why = "not JSON" if isinstance(value, Unparsed) else "not a vibe ACP log line"
                current = current or _start(traces, path)
                current.unconvertible(number, where + why)
                continue
            msg, src, t_ns = value["msg"], DIRS[value["dir"]], _ns(value["ts"])
            new_connection = src == "client" and _is_initialize(msg)
            if current is None or (new_connection and current.converted):
                current, t0 = _start(traces, path), None
            if t0 is None and t_ns is not None:
                t0 = t_ns
                current.header["timing"] = "source"
                current.header["started_at"] = _rfc3339(t_ns)
            if not isinstance(msg, dict | list):
                current.unconvertible(number, f"{where}msg is not a JSON-RPC message")
                continue
            rel = None if t_ns is None or t0 is None else t_ns - t0
            current.message(rel, src, msg)  # type: ignore[arg-type]
    if len(traces) > 1:
        for n, trace in enumerate(traces, 1):
            trace.name = f"{path}#{n}"
    return traces or [_start(traces, path)]


def _is_initialize(msg: Any) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg


def _rfc3339(t_ns: int) -> str:
    when = EPOCH + timedelta(microseconds=t_ns // 1000)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _start(traces: list[TraceBuilder], path: Path) -> TraceBuilder:
    head: dict[str, Any] = {
        "imported_from": "vibe",
        "source": str(path),
        "timing": "ordering-only",  # until a line with a time
        "dropped": None,
        "not_traced": ["stderr"],
    }
    builder = TraceBuilder(str(path), head)
    traces.append(builder)
    return builder
