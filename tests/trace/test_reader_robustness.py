"""The reader and the analyzer never crash on damaged or hostile input: they report and go on."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acp_trace
from tracebuilder import TraceBuilder

HEADER = b'{"acp_trace":1,"kind":"header","command":["x"]}\n'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
message_like = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": json_values,
        "method": st.sampled_from(
            ["session/update", "session/resume", "session/load", "initialize", "$/cancel_request"]
        )
        | json_values,
        "params": json_values
        | st.fixed_dictionaries(
            {
                "sessionId": json_values,
                "update": json_values | st.fixed_dictionaries({"sessionUpdate": json_values}),
            },
            optional={"replayFrom": json_values, "requestId": json_values},
        ),
        "result": json_values,
        "error": json_values | st.fixed_dictionaries({"code": json_values, "data": json_values}),
    },
)
records = st.fixed_dictionaries(
    {
        "seq": st.integers(min_value=-(2**70), max_value=2**70) | json_values,
        "t_ns": st.integers(min_value=-(2**70), max_value=2**70) | json_values,
        "src": st.sampled_from(["client", "agent", "stderr", "tap", "nope"]),
    },
    optional={
        "msg": message_like | json_values,
        "text": json_values,
        "b64": json_values,
        "event": json_values,
        "truncated": json_values,
        "bytes": json_values,
    },
)
lines = st.lists(
    st.one_of(records.map(lambda r: json.dumps(r).encode()), st.binary(max_size=40)),
    max_size=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=lines)
def test_arbitrary_lines_never_crash(tmp_path: Path, body: list[bytes]) -> None:
    """Any mix of damaged, odd and valid lines is read and analyzed without an exception."""
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(HEADER + b"\n".join(line.replace(b"\n", b" ") for line in body))
    analysis = acp_trace.analyze(path)
    tables = (analysis.replays, analysis.findings(), analysis.latency("agent"), analysis.turns)
    assert all(table.width for table in tables)


def test_cut_last_line_is_reported(tmp_path: Path) -> None:
    """A last line cut in the middle becomes a malformed row that says so, with its line number."""
    b = TraceBuilder()
    path = b.write(tmp_path / "t.jsonl")
    path.write_bytes(path.read_bytes() + b'{"seq":3,"t_ns":9,"src":"agent","msg":{"jsonrpc":"2.')
    rows = acp_trace.read_trace(path).filter(kind="malformed")
    assert rows["line"].to_list() == [4]
    assert "cut" in rows["event"][0]


def test_batch_lines_expand(tmp_path: Path) -> None:
    """A JSON array of messages on one line becomes one row per message with the same seq."""
    b = TraceBuilder()
    seq = b.send(
        "client", [{"jsonrpc": "2.0", "id": 9, "method": "a"}, {"jsonrpc": "2.0", "method": "b"}]
    )
    rows = acp_trace.read_trace(b.write(tmp_path / "t.jsonl")).filter(seq=seq)
    assert rows["method"].to_list() == ["a", "b"] and rows["part"].to_list() == [0, 1]


def test_msg_text_is_spliced_bytes(tmp_path: Path) -> None:
    """The msg column holds the message exactly as written in the record, spaces included."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        HEADER + b'{"seq":1,"t_ns":1,"src":"agent","msg": {"jsonrpc": "2.0", "method": "x"} }\n'
    )
    row = acp_trace.read_trace(path).filter(seq=1).row(0, named=True)
    assert row["msg"] == '{"jsonrpc": "2.0", "method": "x"}' and row["bytes"] == 33


def test_out_of_range_numbers_are_malformed(tmp_path: Path) -> None:
    """A seq beyond 64 bits or a non-integer byte count makes the line malformed, not a crash."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        HEADER
        + b'{"seq":1180591620717411303424,"t_ns":5,"src":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{}}}\n'
        + b'{"seq":2,"t_ns":5,"src":"agent","text":"x","truncated":true,"bytes":"no"}\n'
        + b'{"seq":3,"t_ns":5,"src":"agent","msg":{"jsonrpc":"2.0","id":9999999999999999999999,"error":{"code":99999999999999999999}}}\n'
        + b'{"seq":4,"t_ns":5,"src":"client","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}}\n'
    )
    analysis = acp_trace.analyze(path)
    assert analysis.traces()["malformed"].to_list() == [2]
    rules = set(analysis.findings(schema=False)["rule"])
    assert rules == {"orphan-response", "unanswered-request"}


@pytest.mark.parametrize("line", [b"NaN", b"Infinity", b'{"x": -Infinity}'])
def test_non_standard_constants_are_text(line: bytes) -> None:
    """NaN and Infinity are not JSON: such a line is recorded as text, so the trace stays JSON."""
    from acp_trace.trace.format import encode_payload

    assert encode_payload(line).startswith(b'"text":')


@pytest.mark.parametrize(
    ("record", "msg"),
    [
        (
            b'{"msg": {"jsonrpc": "2.0", "method": "x", "params": {"t": "a}\\"b"}} , "seq": 1, "t_ns": 1, "src": "agent"}',
            '{"jsonrpc": "2.0", "method": "x", "params": {"t": "a}\\"b"}}',
        ),
        (
            b'{"seq":1,"msg":{"jsonrpc":"2.0","method":"x"},"t_ns":1,"src":"agent"}',
            '{"jsonrpc":"2.0","method":"x"}',
        ),
    ],
)
def test_msg_anywhere_in_the_record_keeps_its_bytes(
    tmp_path: Path, record: bytes, msg: str
) -> None:
    """A hand-written record may put msg first; its text and byte size are still as written."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER + record + b"\n")
    row = acp_trace.read_trace(path).filter(seq=1).row(0, named=True)
    assert row["msg"] == msg and row["bytes"] == len(msg.encode())


def test_batch_elements_keep_their_bytes(tmp_path: Path) -> None:
    """Each element of a batch line keeps its own text and byte size, spaces and all."""
    path = tmp_path / "t.jsonl"
    body = b'[ {"jsonrpc": "2.0", "id": 1, "method": "a"} ,{"jsonrpc":"2.0","method":"b, [c]"}]'
    path.write_bytes(HEADER + b'{"seq":1,"t_ns":1,"src":"client","msg":' + body + b"}\n")
    rows = acp_trace.read_trace(path).filter(seq=1)
    assert rows["msg"].to_list() == [
        '{"jsonrpc": "2.0", "id": 1, "method": "a"}',
        '{"jsonrpc":"2.0","method":"b, [c]"}',
    ]
    assert rows["bytes"].to_list() == [42, 35]


# ---------------------------------------------------------------- hostile input (issue 19)

REC = b'{"seq":%d,"t_ns":%d,"src":"%s","msg":%s}'
CUT_EMOJI = b'"a\\ud83d"'  # what JSON.stringify writes for half an emoji


@pytest.mark.parametrize(
    ("line", "column", "value"),
    [
        (
            REC % (1, 1, b"client", b'{"jsonrpc":"2.0","id":%s,"method":"m"}' % CUT_EMOJI),
            "id",
            '"a\\ud83d"',
        ),
        (
            REC % (1, 1, b"client", b'{"jsonrpc":"2.0","id":1,"method":%s}' % CUT_EMOJI),
            "method",
            "a\\ud83d",
        ),
        (
            REC
            % (
                1,
                1,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%s}}'
                % CUT_EMOJI,
            ),
            "session_id",
            "a\\ud83d",
        ),
        (
            REC
            % (
                1,
                1,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":%s}}}'
                % CUT_EMOJI,
            ),
            "update_kind",
            "a\\ud83d",
        ),
        (
            REC
            % (
                1,
                1,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x","sessionId":%s}}}'
                % CUT_EMOJI,
            ),
            "update_session",
            "a\\ud83d",
        ),
        (b'{"seq":1,"t_ns":1,"src":"stderr","text":%s}' % CUT_EMOJI, "text", "a\\ud83d"),
        (b'{"seq":1,"t_ns":1,"src":"tap","event":%s}' % CUT_EMOJI, "event", "a\\ud83d"),
        (
            REC % (1, 1, b"agent", b'[{"jsonrpc":"2.0","id":%s,"result":{}}]' % CUT_EMOJI),
            "id",
            '"a\\ud83d"',
        ),
    ],
)
def test_lone_surrogates_are_read_escaped(
    tmp_path: Path, line: bytes, column: str, value: str
) -> None:
    """A lone surrogate (which no UTF-8 text holds) in any field is read as its escape, and
    every table is built; a half emoji never merges with another."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER + line + b"\n" + line.replace(b"ud83d", b"ud83e") + b"\n")
    analysis = acp_trace.analyze(path)
    rows = analysis.records.filter(pl.col("seq") == 1)
    assert rows[column].to_list() == [value, value.replace("ud83d", "ud83e")]
    assert analysis.replays.width and analysis.findings().width and analysis.turns.width


def test_a_header_with_a_lone_surrogate_names_the_agent(tmp_path: Path) -> None:
    """The agent's name taken from a header's command keeps the surrogate escaped."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"acp_trace":1,"kind":"header","command":["ag\\ud83dent"]}\n')
    assert acp_trace.timeline(path)["agent"].to_list() == ["ag\\ud83dent"]


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    "body",
    [
        HEADER + REC % (1, 1, b"agent", DEEP) + b"\n",
        HEADER + REC % (1, 1, b"agent", b"[" * 1025 + b"]" * 1025) + b"\n",
        HEADER
        + REC % (1, 1, b"client", b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + DEEP + b"}")
        + b"\n",
    ],
)
def test_deep_nesting_in_a_record_is_a_malformed_line(tmp_path: Path, body: bytes) -> None:
    """JSON nested past what a parser holds is a malformed line, never a RecursionError."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(body)
    analysis = acp_trace.analyze(path)
    assert analysis.records.filter(kind="malformed")["line"].to_list() == [2]
    assert analysis.findings().width


def test_deep_nesting_in_a_header_or_a_bare_file_is_no_crash(tmp_path: Path) -> None:
    """A deep header makes the file no trace (skipped in a folder); a bare JSON-RPC file with a
    deep line is imported with that line as it is."""
    (tmp_path / "head.jsonl").write_bytes(b'{"acp_trace":1,"kind":"header","x":' + DEEP + b"}\n")
    bare = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}\n'
    (tmp_path / "bare.jsonl").write_bytes(bare + DEEP + b"\n")
    records = acp_trace.read_trace(tmp_path)
    assert records.filter(kind="skipped")["trace"].to_list() == [str(tmp_path / "head.jsonl")]
    assert records.filter(kind="request").height == 1


def test_ids_beyond_64_bits_pair_exactly(tmp_path: Path) -> None:
    """Two ids that differ in their 30th digit are two requests, each answered by its own
    response; no false duplicate id, and the ids are kept as written."""
    big = b"123456789012345678901234567890"
    request = b'{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":"/"}}'
    answer = b'{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"%s"}}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        HEADER
        + b"\n".join(
            [
                REC % (1, 1, b"client", request % big),
                REC % (2, 2, b"client", request % (big[:-1] + b"1")),
                REC % (3, 3, b"agent", answer % (big[:-1] + b"1", b"s2")),
                REC % (4, 4, b"agent", answer % (big, b"s1")),
            ]
        )
        + b"\n"
    )
    tl = acp_trace.timeline(path).filter(pl.col("kind") != "header")
    one, two = big.decode(), big.decode()[:-1] + "1"
    assert tl["id"].to_list() == [one, two, two, one]
    assert tl["peer_row"].to_list() == [4, 3, 2, 1]
    assert tl["duplicate_id"].to_list()[:2] == [False, False]
    assert tl["session"].to_list() == [None, None, "s2", "s1"]


def test_out_of_address_space_is_one_line(tmp_path: Path) -> None:
    """Under `ulimit -v` that holds acp-trace but not the input, the CLI names the input in
    one line and exits 2 (no Rust abort)."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "t.jsonl"
    line = REC % (
        1,
        1,
        b"agent",
        b'{"jsonrpc":"2.0","method":"x","params":{"t":"' + b"a" * 40 + b'"}}',
    )
    path.write_bytes(HEADER + (line + b"\n") * 600_000)  # 64 MB in 600,000 lines

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500 << 20, resource.RLIM_INFINITY))

    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "replays", str(path)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"acp-trace: out of memory for {path} (")
    assert "Try fewer or smaller traces" in done.stderr
