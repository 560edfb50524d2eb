"""Trace format v1 round trip: what the recorder's writer encodes, the reader gives back."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_trace.errors import InputError
from acp_trace.jsonrpc import is_message
from acp_trace.record import writer as trace_writer
from acp_trace.trace.format import encode_header
from acp_trace.trace.reader import read_trace, skipped_inputs

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
        elif row["kind"] == "text" and row["text"] == f"<redacted: {len(line)} bytes>":
            assert src != "stderr"  # a line that may hold a secret (record/redact.py)
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


# ---------------------------------------------------------------- inputs as they are on disk

HEADER = b'{"acp_trace":1,"kind":"header","command":["agent"]}\n'
RECORD = b'{"seq":1,"t_ns":5,"src":"agent","msg":{"jsonrpc":"2.0","method":"x"}}\n'


def test_files_that_are_no_trace_are_skipped_in_a_directory(tmp_path: Path) -> None:
    """A stray log, an empty file, a half-written header and a JSON file that is no trace are
    skipped (one `skipped` row each, with the reason), the good trace is read."""
    (tmp_path / "good.jsonl").write_bytes(HEADER + RECORD)
    (tmp_path / "agent.log").write_text("starting agent\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "half.jsonl").write_bytes(b'{"acp_trace":1,"kind":"hea')
    (tmp_path / "config.json").write_text('{"theme": "dark"}\n')
    records = read_trace(tmp_path)
    skipped = skipped_inputs(records)
    names = [Path(t).name for t in skipped["trace"]]
    assert names == ["agent.log", "config.json", "empty.jsonl", "half.jsonl"]
    assert "found an empty file" in skipped["problem"][2]
    assert not any(str(tmp_path) in p for p in skipped["problem"])  # the reason, not the path
    good = records.filter(pl.col("kind") != "skipped")
    assert good["trace"].unique().to_list() == [str(tmp_path / "good.jsonl")]


def test_a_file_named_itself_that_is_no_trace_is_an_error(tmp_path: Path) -> None:
    """Named on the command line, a file that is not a trace raises InputError."""
    (tmp_path / "agent.log").write_text("starting agent\n")
    with pytest.raises(InputError, match=r"agent\.log: expected an acp-trace v1 trace"):
        read_trace([tmp_path / "agent.log"])


def test_a_directory_with_no_readable_trace_is_an_error(tmp_path: Path) -> None:
    """When every candidate is skipped, the directory yields no trace: InputError says why."""
    (tmp_path / "a.log").write_text("log line\n")
    (tmp_path / "b.jsonl").write_bytes(b"")
    with pytest.raises(InputError) as info:
        read_trace([tmp_path])
    text = str(info.value)
    assert text.startswith(f"{tmp_path}: no trace among its 2 files (a.log: expected")
    assert "b.jsonl: expected" in text


def test_concatenated_traces_are_read_one_by_one(tmp_path: Path) -> None:
    """`cat a.jsonl b.jsonl > c.jsonl` gives traces c.jsonl#1 and c.jsonl#2, each with its
    header and records (file line numbers kept); a header key inside a string splits nothing."""
    noisy = (
        b'{"seq":2,"t_ns":6,"src":"stderr","text":"{\\"acp_trace\\":1,\\"kind\\":\\"header\\"}"}\n'
    )
    path = tmp_path / "c.jsonl"
    path.write_bytes(HEADER + RECORD + noisy + HEADER + RECORD)
    records = read_trace(path)
    name = str(path)
    assert records["trace"].to_list() == [f"{name}#1"] * 3 + [f"{name}#2"] * 2
    assert records["kind"].to_list() == ["header", "notification", "text", "header", "notification"]
    assert records["line"].to_list() == [1, 2, 3, 4, 5]


def test_a_single_trace_keeps_its_name(tmp_path: Path) -> None:
    """A file with one header (and a header key only inside a message) is not split."""
    noisy = b'{"seq":2,"t_ns":6,"src":"stderr","text":"{\\"acp_trace\\":1}"}\n'
    path = tmp_path / "one.jsonl"
    path.write_bytes(HEADER + RECORD + noisy)
    assert read_trace(path)["trace"].unique().to_list() == [str(path)]
