"""The message columns the passes read instead of parsing again: `has_message_id`, `state`,
`stop_reason` and `accepted`, the same whichever path reads the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from polars.testing import assert_frame_equal

from acp_trace.trace.reader import read_trace

HEAD = b'{"acp_trace":1,"kind":"header","command":["x"]}\n'
META = b'"_meta":{"executablemd.session-materialization/v1":%s}'
# (update fields, (has_message_id, state, stop_reason, accepted))
UPDATES: list[tuple[bytes, tuple[Any, ...]]] = [
    (b'"messageId":"m"', (True, None, None, False)),
    (b'"messageId":""', (True, None, None, False)),
    (b'"messageId":0', (True, None, None, False)),
    (b'"messageId":{"a":1}', (True, None, None, False)),
    (b'"messageId":null', (False, None, None, False)),
    (b'"messageId" : null', (False, None, None, False)),
    (b"", (False, None, None, False)),
    (b'"messageid":"m"', (False, None, None, False)),
    (b'"messageId":"m","messageId":null', (False, None, None, False)),
    (b'"messageId":null,"messageId":"m"', (True, None, None, False)),
    (b'"m\\u0065ssageId":"m"', (True, None, None, False)),
    (b'"messageId":"\\ud83d"', (True, None, None, False)),
    (b'"state":"idle"', (False, "idle", None, False)),
    (b'"state":"idle","state":1', (False, None, None, False)),
    (b'"state":{"state":"idle"}', (False, None, None, False)),
    (b'"state":"id\\ud83dle"', (False, "id\\ud83dle", None, False)),
    (b'"stopReason":"end_turn"', (False, None, "end_turn", False)),
    (b'"stopReason":["end_turn"]', (False, None, None, False)),
    (b'"stopReason":"end\\u005fturn"', (False, None, "end_turn", False)),
    (META % b'{"state":"accepted"}', (False, None, None, True)),
    (META % b'{"state":"accepted","title":"t"}', (False, None, None, True)),
    (META % b'"accepted"', (False, None, None, False)),
    (META % b'{"state":"Accepted"}', (False, None, None, False)),
    (META % b'{"state":"accepted","state":"no"}', (False, None, None, False)),
    (META % b'{"state":"accepted"}' + b',"_meta":null', (False, None, None, False)),
    (b'"_meta":null,' + META % b'{"state":"accepted"}', (False, None, None, True)),
    (
        b'"_meta":{"executablemd.session-materialization\\/v1":{"state":"accepted"}}',
        (False, None, None, True),
    ),
    (b'"_meta":[1]', (False, None, None, False)),
]
# (the message's fields after jsonrpc, (stop_reason, has_message_id)): a response's
# `stop_reason` is its result's, whatever else the message holds
RESULTS: list[tuple[bytes, tuple[Any, ...]]] = [
    (b'"id":1,"result":{"stopReason":"end_turn"}', ("end_turn", None)),
    (b'"id":1,"result":{"stopReason":1}', (None, None)),
    (b'"id":1,"result":["stopReason"]', (None, None)),
    (b'"id":1,"result":null', (None, None)),
    (b'"id":1,"error":{"code":1},"result":{"stopReason":"e"}', ("e", None)),
    (
        b'"id":1,"params":{"update":{"stopReason":"u","messageId":"m"}},"result":{"stopReason":"r"}',
        ("r", True),
    ),
    (
        b'"id":1,"method":"m","params":{"update":{"stopReason":"u"}},"result":{"stopReason":"r"}',
        ("u", False),
    ),
    (b'"method":"m","params":{"update":"x"}', (None, None)),
    (b'"method":"m","params":{"update":[{"messageId":"m"}]}', (None, None)),
]


def _update(fields: bytes) -> bytes:
    sep = b"," if fields else b""
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message"' + sep + fields + b"}}}"
    )


def _trace(tmp_path: Path, msgs: list[bytes]) -> Path:
    rec = b'{"seq":%d,"t_ns":%d,"src":"agent","msg":%s}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEAD + b"".join(rec % (i, i, m) + b"\n" for i, m in enumerate(msgs, 1)))
    return path


@pytest.fixture(params=["columns", "row tuples", "line reader", "batch"])
def read(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A reader of one path: the native one into columns or row tuples, the line reader alone,
    or the line reader of each message as the element of a batch."""
    from acp_trace.trace import blocks

    monkeypatch.setattr(blocks, "FAST_MIN_BYTES", 1 << 30 if request.param == "row tuples" else 0)
    if request.param in ("line reader", "batch"):
        monkeypatch.setattr(blocks, "_fast", lambda *args: (None, 0))
        monkeypatch.setattr(blocks, "_fast_rows", lambda *args: None)
    return request.param


COLUMNS = ["has_message_id", "state", "stop_reason", "accepted"]


def test_update_fields_become_columns(tmp_path: Path, read: str) -> None:
    """Each form an update's fields may take gives its columns, by every reading path."""
    msgs = [_update(fields) for fields, _ in UPDATES]
    if read == "batch":
        msgs = [b"[" + m + b"," + m + b"]" for m in msgs]
    records = read_trace(_trace(tmp_path, msgs))
    got = records.filter(records["kind"] == "notification").select(COLUMNS).rows()
    expected = [want for _, want in UPDATES]
    if read == "batch":
        expected = [want for want in expected for _ in range(2)]
    assert got == expected


def test_a_responses_stop_reason_is_its_results(tmp_path: Path, read: str) -> None:
    """`stop_reason` of a response (or error) is `result.stopReason`; of any other message the
    update's; `has_message_id` is null without an update object."""
    msgs = [b'{"jsonrpc":"2.0",' + fields + b"}" for fields, _ in RESULTS]
    records = read_trace(_trace(tmp_path, msgs))
    got = records.filter(records["kind"] != "header").select("stop_reason", "has_message_id")
    assert got.rows() == [want for _, want in RESULTS]


def test_every_path_reads_the_same_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole table of these lines is the same by the native path and the line reader."""
    from acp_trace.trace import blocks

    monkeypatch.setattr(blocks, "FAST_MIN_BYTES", 0)
    msgs = [_update(f) for f, _ in UPDATES] + [b'{"jsonrpc":"2.0",' + f + b"}" for f, _ in RESULTS]
    path = _trace(tmp_path, msgs * 20)
    native = read_trace(path)
    monkeypatch.setattr(blocks, "_fast", lambda *args: (None, 0))
    monkeypatch.setattr(blocks, "_fast_rows", lambda *args: None)
    assert_frame_equal(native, read_trace(path))
