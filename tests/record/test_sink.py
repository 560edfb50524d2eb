"""The trace file in the writer process: whole records only, whatever goes wrong."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from acp_trace.record import sink as sink_mod
from acp_trace.record.sink import TraceSink

HEADER = b'{"acp_trace":1,"kind":"header"}\n'


def record(seq: int, size: int = 40) -> bytes:
    return b'{"seq":%d,"t_ns":0,"src":"agent","text":"%s"}\n' % (seq, b"r" * size)


def error_line(seq: int, message: str, cause: str) -> bytes:
    text = json.dumps(
        {"seq": seq, "t_ns": 0, "src": "tap", "event": "error", "message": message, "cause": cause}
    )
    return text.encode() + b"\n"


def open_sink(path: Path, said: list[str]) -> TraceSink:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return TraceSink(fd, path, said.append, error_line)


def lines_of(path: Path) -> list[dict[str, object]]:
    data = path.read_bytes()
    assert data.endswith(b"\n") or not data
    return [json.loads(line) for line in data.splitlines()]


def test_a_file_size_limit_keeps_whole_records_and_room_for_the_error(tmp_path: Path) -> None:
    """Under a file size limit the records stop EVENT_ROOM bytes before it: what fits is
    written whole, the rest is counted as lost, the trace ends with an `error` that names the
    limit, and it is said once."""
    path, said = tmp_path / "t.jsonl", []
    sink = open_sink(path, said)
    sink._limit = 6000
    sink.start(HEADER)
    sink.write([record(n, 100) for n in range(1, 40)], 1)
    sink.write([record(40)], 40)
    sink.close()
    records = lines_of(path)[1:]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert records[-1]["event"] == "error" and "RLIMIT_FSIZE" in str(records[-1]["message"])
    assert path.stat().st_size <= 6000
    assert sink.written + sink.lost == 40 and sink.lost > 0 and len(said) == 1


def test_a_disk_without_room_for_the_batch_writes_what_fits_then_the_error(tmp_path: Path) -> None:
    """When the reserve for a batch cannot be had (the disk is full), the halves that fit are
    written, then the `error` event into the room reserved before; nothing is cut."""
    path, said = tmp_path / "t.jsonl", []
    sink = open_sink(path, said)
    calls: list[int] = []

    def fallocate(_fd: int, offset: int, length: int) -> None:
        calls.append(length)
        if offset + length > 3000 + sink_mod.RESERVE:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    sink._fallocate = fallocate
    sink.start(HEADER)
    sink.write([record(n) for n in range(1, 101)], 1)
    sink.close()
    records = lines_of(path)[1:]
    assert 0 < sink.written < 100 and sink.written + sink.lost == 100
    assert [r["seq"] for r in records] == list(range(1, sink.written + 2))
    assert records[-1]["cause"] == "write" and "No space left on device" in str(
        records[-1]["message"]
    )
    assert len(said) == 1


def test_a_failing_write_is_cut_back_to_the_last_whole_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails halfway (an I/O error) leaves half a record: it is cut back off, and
    the trace ends with the `error` event after the last whole record."""
    path, said = tmp_path / "t.jsonl", []
    sink = open_sink(path, said)
    sink._fallocate = None
    sink.start(HEADER)
    sink.write([record(1)], 1)
    real = os.writev

    def half_then_fail(fd: int, buffers: list[bytes]) -> int:
        os.write(fd, buffers[0][:10])
        monkeypatch.setattr(sink_mod.os, "writev", real)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(sink_mod.os, "writev", half_then_fail)
    sink.write([record(2), record(3)], 2)
    sink.write([record(4)], 4)
    sink.close()
    records = lines_of(path)[1:]
    assert [r["seq"] for r in records] == [1, 2]
    assert records[1]["event"] == "error" and "Input/output error" in str(records[1]["message"])
    assert (sink.written, sink.lost) == (1, 3) and len(said) == 1


def test_a_removed_trace_is_said_once_and_closed(tmp_path: Path) -> None:
    """Once the trace has no name left, the sink says so once, stops and closes the file
    (freeing its space); later records are counted as lost."""
    path, said = tmp_path / "t.jsonl", []
    sink = open_sink(path, said)
    sink.start(HEADER)
    sink.write([record(1)], 1)
    path.unlink()
    sink.check_removed()
    sink.write([record(2)], 2)
    sink.check_removed()
    sink.close()
    assert (
        sink.stopped
        and sink.lost == 1
        and said
        == [
            f"the trace {path} was removed while recording; forwarding goes on, nothing more is recorded"
        ]
    )


def test_a_disk_full_at_start_still_gets_the_header_and_the_error_if_they_fit(
    tmp_path: Path,
) -> None:
    """No room for the reserve at start: the header and the `error` event are written without
    one, and every later record is counted as lost."""
    path, said = tmp_path / "t.jsonl", []
    sink = open_sink(path, said)

    def full(_fd: int, _offset: int, _length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    sink._fallocate = full
    sink.start(HEADER)
    sink.write([record(1)], 1)
    sink.close()
    header, error = lines_of(path)
    assert header["kind"] == "header" and error["seq"] == 1 and error["cause"] == "write"
    assert sink.lost == 1 and len(said) == 1
