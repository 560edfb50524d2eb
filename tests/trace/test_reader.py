"""Trace format v1 round trip: what the recorder's writer encodes, the reader gives back."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_trace.jsonrpc import is_message
from acp_trace.record import writer as trace_writer
from acp_trace.trace.format import encode_header
from acp_trace.trace.reader import read_trace

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers() | st.text(max_size=5)},
    optional={
        "method": st.sampled_from(["initialize", "session/update", "x/y"]),
        "params": json_values,
    },
)
lines = st.one_of(
    st.binary(max_size=100),
    st.text(max_size=60).map(str.encode),
    st.sampled_from([b"NaN", b"[1, -Infinity]", b'{"a": "NaN"}']),
    st.tuples(json_values | messages, st.sampled_from([b"", b" ", b"\r", b"\t "])).map(
        lambda pair: pair[1] + json.dumps(pair[0]).encode() + pair[1]
    ),
).map(lambda line: line.replace(b"\n", b""))


def write_trace(path: Path, items: list[trace_writer.Item]) -> None:
    """Write a trace through the recorder's own encoder (redaction on, no record limit)."""
    head = {"started_at": "2026-11-30T10:11:06.123456Z", "command": ["agent"], "cwd": "/", "pid": 1}
    data = encode_header({**head, "recorder": "acp-trace test"})
    data += b"".join(trace_writer.encode_item(item, redact=True, max_bytes=None) for item in items)
    for line in data.splitlines():
        json.loads(line, parse_constant=reject)  # every line is standard JSON
    path.write_bytes(data)


def reject(name: str) -> None:
    raise ValueError(f"{name} in a trace line")


def is_batch(line: bytes) -> bool:
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, list) and bool(value) and all(is_message(m) for m in value)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["client", "agent", "stderr"]), lines), max_size=25))
def test_written_lines_read_back_as_the_same_payloads(recorded: list[tuple[str, bytes]]) -> None:
    """Random lines encoded by the writer read back: msg is the stripped JSON, text/b64 exact."""
    recorded = [(src, line) for src, line in recorded if not is_batch(line)]
    items = [trace_writer.Item(n, n * 10, src, line) for n, (src, line) in enumerate(recorded, 1)]
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "t.jsonl"
        write_trace(path, items)
        frame = read_trace(path)
    frame = frame.filter(frame["kind"] != "header")
    assert frame["seq"].to_list() == [item.seq for item in items]
    assert frame["src"].to_list() == [src for src, _ in recorded]
    for row, (src, line) in zip(frame.iter_rows(named=True), recorded, strict=True):
        if row["msg"] is not None:
            assert src != "stderr"
            assert row["msg"].encode() == line.strip(b" \t\r")
        elif row["kind"] == "text":
            assert row["text"].encode() == line
        else:
            assert row["kind"] == "b64" and base64.b64decode(row["text"]) == line


def test_tap_events_and_flags_read_back(tmp_path: Path) -> None:
    """Tap events become event rows; eol, redacted and truncated records stay readable."""
    secret = b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"k","key":"s"}}'
    items = [
        trace_writer.Item(1, 5, "client", secret),
        trace_writer.Item(2, 6, "agent", b"partial", eol=False),
        trace_writer.Item(3, 7, "tap", event={"event": "dropped", "count": 3}),
        trace_writer.Item(4, 8, "tap", event={"event": "exit", "code": None, "signal": 15}),
    ]
    path = tmp_path / "t.jsonl"
    write_trace(path, items)
    frame = read_trace(path)
    rows = frame.filter(frame["kind"] != "header").to_dicts()
    assert json.loads(rows[0]["msg"])["params"] == {"methodId": "k", "key": "<redacted>"}
    assert rows[1]["kind"] == "text" and rows[1]["text"] == "partial"
    assert [(r["kind"], r["event"]) for r in rows[2:]] == [("event", "dropped"), ("event", "exit")]
    assert json.loads(rows[3]["text"]) == {"event": "exit", "code": None, "signal": 15}
    assert frame.filter(frame["kind"] == "malformed").is_empty()
