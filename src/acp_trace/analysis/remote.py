"""What a remote recording adds to a trace (docs/trace-format.md, "Remote recordings"): where
each message travelled, and the HTTP exchanges and WebSockets as the proxy's events tell them.

The records table keeps the messages and the events (an event's fields are its `text`); the
optional keys of a message record (`transport`, `channel`, `exchange`, `acp_session`) are read
here from the trace file itself, only for traces whose header names an `upstream`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import polars as pl

from acp_trace.jsonrpc import as_dict, loads

__all__ = ["Exchange", "RemoteTrace", "remote_traces"]

WHERE = ("transport", "channel", "exchange", "acp_connection", "acp_session")


@dataclass
class Exchange:
    """One HTTP request and its answer, or one WebSocket: its `open`, `status` and `end`
    events (the timeline row of each, and the end's fields)."""

    number: int
    transport: str = "http"
    channel: str = "other"
    method: str = ""
    acp_session: str | None = None
    open_row: int | None = None
    status: int | None = None
    status_row: int | None = None
    end_row: int | None = None
    end: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemoteTrace:
    """A remote recording: where each message record travelled (by seq), its exchanges, and
    its `reconnect` events (row, fields)."""

    where: dict[int, dict[str, Any]]
    exchanges: dict[int, Exchange]
    reconnects: list[tuple[int, dict[str, Any]]]

    def of(self, seq: int | None) -> dict[str, Any]:
        return self.where.get(seq, {}) if seq is not None else {}

    def label(self, seq: int | None) -> str:
        """`the session stream of s1 (exchange 4)`, for messages."""
        where = self.of(seq)
        return stream_label(where.get("channel"), where.get("acp_session"), where.get("exchange"))


def stream_label(channel: str | None, session: str | None, exchange: int | None) -> str:
    names = {
        "post": "the POST",
        "connection": "the connection stream",
        "session": f"the session stream of {session}",
        "ws": "the WebSocket",
    }
    return f"{names.get(channel or '', channel or 'an unknown stream')} (exchange {exchange})"


def remote_traces(
    timeline: pl.DataFrame, headers: dict[str, dict[str, Any]]
) -> dict[str, RemoteTrace]:
    """The remote recordings among the timeline's traces (a header with `upstream`) whose file
    can still be read."""
    out: dict[str, RemoteTrace] = {}
    for trace, head in headers.items():
        if "upstream" not in head or not os.path.isfile(trace):
            continue
        stat = os.stat(trace)
        where = _where(trace, stat.st_size, stat.st_mtime_ns)
        events = timeline.filter((pl.col("trace") == trace) & (pl.col("kind") == "event"))
        exchanges, reconnects = _exchanges(events)
        out[trace] = RemoteTrace(where, exchanges, reconnects)
    return out


@lru_cache(maxsize=16)
def _where(path: str, _size: int, _mtime: int) -> dict[int, dict[str, Any]]:
    """seq -> the where-keys of each message record of the file (cached per version)."""
    where: dict[int, dict[str, Any]] = {}
    with open(path, "rb") as file:
        for line in file:
            if b'"transport"' not in line or b'"event"' in line[:80]:
                continue
            record = as_dict(loads(line))
            seq = record.get("seq")
            if isinstance(seq, int) and "event" not in record:
                where[seq] = {k: record[k] for k in WHERE if k in record}
    return where


def _exchanges(
    events: pl.DataFrame,
) -> tuple[dict[int, Exchange], list[tuple[int, dict[str, Any]]]]:
    exchanges: dict[int, Exchange] = {}
    reconnects: list[tuple[int, dict[str, Any]]] = []
    for row, name, text in events.select("row", "event", "text").rows():
        detail = as_dict(loads(text)) if text else {}
        number = detail.get("exchange")
        if not isinstance(number, int):
            continue
        ex = exchanges.setdefault(number, Exchange(number))
        if name == "open":
            ex.transport = str(detail.get("transport", "http"))
            ex.channel, ex.method = (
                str(detail.get("channel", "other")),
                str(detail.get("method", "")),
            )
            ex.acp_session, ex.open_row = detail.get("acp_session"), row
        elif name == "status":
            ex.status, ex.status_row = detail.get("status"), row
        elif name == "end":
            ex.end, ex.end_row = detail, row
        elif name == "reconnect":
            reconnects.append((row, detail))
    return exchanges, reconnects
