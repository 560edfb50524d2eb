"""Hostile input to the weight pass (issue 42): a finding or a count, never a crash."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from acp_trace.analysis import analyze
from tracebuilder import TraceBuilder


def test_a_hundred_thousand_update_kinds_in_one_replay(tmp_path: Path) -> None:
    """Unknown kinds are no history: bytes_by_kind holds the history kinds only, the largest
    line is named by its own kind whatever it is."""
    b = TraceBuilder()
    rid = b.resume("s1")
    b.history("s1", 1)
    n = 100_000
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    for i in range(n):
        b.seq += 1
        b.t_ns += 1000
        kind = "\\u001b[31m" if i == 0 else f"kind-{i}"
        msg = head + b'{"sessionUpdate":"' + kind.encode() + b'","pad":"' + b"x" * (200 + i // 5000)
        b.lines.append(b'{"seq":%d,"t_ns":%d,"src":"agent","msg":%s"}}}}' % (b.seq, b.t_ns, msg))
    b.marker("s1")
    b.state("s1")
    b.response(rid, {})
    a = analyze(b.write(tmp_path / "t.jsonl"))
    assert a.records.filter(pl.col("kind") == "malformed").is_empty()
    assert a.timeline["update_kind"].n_unique() > n
    row = a.replays.row(0, named=True)
    assert {d["kind"] for d in row["bytes_by_kind"]} == {"user_message", "agent_message"}
    assert row["largest_update_kind"] == "kind-95000"  # the first of the longest
    assert a.findings().filter(pl.col("rule") == "frame-over-client-limit").is_empty()


def test_a_cut_record_with_hostile_text_is_named_escaped(tmp_path: Path) -> None:
    """A cut line of 1 GB whose first bytes name a hostile kind: the finding names the limit
    and the kind; a person's output escapes it."""
    b = TraceBuilder()
    rid = b.resume("s1")
    cut = '{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":'
    cut += '"\x1b]8;;evil\x07tool","x":"'
    b.raw("agent", {"text": cut, "truncated": True, "bytes": 1 << 30})
    b.response(rid, {})
    path = b.write(tmp_path / "t.jsonl")
    a = analyze(path)
    found = a.findings().filter(pl.col("rule") == "frame-over-client-limit")
    assert found.height == 1 and "64 MiB" in found["message"][0]
    assert a.replays["largest_update_bytes"][0] == 1 << 30
    from acp_trace.render.report import format_findings

    text = format_findings(found, a.traces(), 0)
    assert "\x1b" not in text and "\x07" not in text


def test_a_window_of_a_connection_that_ended(tmp_path: Path) -> None:
    """A replay cut by the end of the connection: its silence runs to that end, no quiet end
    when the trace ends before the cap."""
    b = TraceBuilder()
    b.resume("s1")
    b.history("s1", 1, dt=10)
    b.event("eof", dt=30_000, stream="agent")
    lines = [orjson.loads(line) for line in b.lines]
    assert lines[-1]["event"] == "eof"
    a = analyze(b.write(tmp_path / "t.jsonl"))
    row = a.replays.row(0, named=True)
    assert row["outcome"] in ("truncated", "open")
    assert row["longest_silence_ms"] >= 30_000
