"""The writer process's encoder: frames from the ring become trace records."""

from __future__ import annotations

import json
import marshal
from typing import Any

import pytest

from acp_trace.record import writer as writer_mod
from acp_trace.record.ring import CHUNK, END, EVENT, GAP, GAP_KIND, Frame
from acp_trace.record.writer import Encoder


def chunk(src: str, t: int, data: bytes) -> Frame:
    return Frame(CHUNK, src, t, data)


def gap(src: str, t: int, lost: bytes) -> Frame:
    return Frame(GAP_KIND, src, t, GAP.pack(len(lost), lost.count(b"\n"), lost.endswith(b"\n")))


def encode(frames: list[Frame], **how: Any) -> list[dict[str, Any]]:
    encoder = Encoder(**({"redact": True, "max_bytes": 1 << 20, "t0": 1000} | how))
    out: list[bytes] = []
    for frame in frames:
        encoder.frame(frame, out)
    encoder.finish(out)
    records = [json.loads(line) for line in out]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    return records


def test_lines_are_cut_out_of_chunks_and_stamped_by_the_read_that_ends_them() -> None:
    """A line spanning reads gets the stamp of the read that brings its newline; lines ended
    by one read share its stamp; t_ns counts from the tap's start."""
    records = encode(
        [
            chunk("agent", 1100, b'{"a":'),
            chunk("agent", 1200, b"1}\nx\ny"),
            chunk("agent", 1300, b"\n"),
        ]
    )
    assert [(r["t_ns"], r.get("msg", r.get("text"))) for r in records] == [
        (200, {"a": 1}),
        (200, "x"),
        (300, "y"),
    ]


def test_a_line_over_the_limit_keeps_its_start_and_its_real_length() -> None:
    """Only max_bytes + 1 bytes of a long line are kept, however many reads it spans; the
    record is cut at max_bytes, `truncated`, with the whole line's `bytes`, with or without
    its newline."""
    frames = [chunk("client", 1000 + n, b"z" * 4096) for n in range(100)]
    records = encode(
        [*frames, chunk("client", 2000, b"\nnext\n"), chunk("client", 2001, b"w" * 9000)],
        max_bytes=1000,
    )
    first, second, third = records
    assert first["truncated"] is True and first["bytes"] == 409_600 and first["text"] == "z" * 1000
    assert second == second | {"text": "next"} and "truncated" not in second
    assert third["bytes"] == 9000 and third["eol"] is False and third["text"] == "w" * 1000


def test_a_gap_counts_the_lines_it_touched_once() -> None:
    """Dropped chunks cost the lines they touched: the unfinished line before them, the lines
    inside, the line they cut; the rest of a cut line is skipped, and a second gap in the same
    line is not counted again."""
    frames = [
        chunk("agent", 1001, b"one\ntw"),
        gap("agent", 1002, b"o\nthree\nfo"),  # ends two, three, cuts four
        chunk("agent", 1003, b"ur-end"),
        gap("agent", 1004, b"still four"),  # the same line: counted already
        chunk("agent", 1005, b"\nfive\n"),
        gap("client", 1006, b"c1\n"),  # ends with its line: nothing to skip
        chunk("client", 1007, b"c2\n"),
    ]
    records = encode(frames)
    summary = [(r["src"], r.get("text") or r.get("count"), r.get("stream")) for r in records]
    assert summary == [
        ("agent", "one", None),
        ("tap", 3, "agent"),
        ("agent", "five", None),
        ("tap", 1, "client"),
        ("client", "c2", None),
    ]


def test_the_end_of_a_stream_records_its_unfinished_line() -> None:
    """An END frame records the stream's unfinished line with eol false; a tap event follows
    in order."""
    event = Frame(EVENT, "tap", 1003, marshal.dumps({"event": "eof", "stream": "client"}))
    records = encode([chunk("client", 1001, b"a\nb"), Frame(END, "client", 1002, b""), event])
    assert [(r.get("text"), r.get("eol"), r.get("event")) for r in records] == [
        ("a", None, None),
        ("b", False, None),
        (None, None, "eof"),
    ]


@pytest.mark.parametrize(
    ("redact", "expected"),
    [
        (True, {"text": "", "truncated": True, "bytes": 13}),
        (False, {"text": "secret: s3cr3"}),
    ],
)
def test_a_line_that_cannot_be_encoded_costs_its_content_never_a_leak(
    monkeypatch: pytest.MonkeyPatch, redact: bool, expected: dict[str, Any]
) -> None:
    """When the payload function fails (a bug, no memory) the record stays, without its content
    when redaction is on (it might hold a secret) and as plain text when it is off, and an
    `error` event (cause `encode`) says which record."""

    def broken(*_args: Any, **_kwargs: Any) -> bytes:
        raise MemoryError("no memory")

    monkeypatch.setattr(writer_mod, "line_payload", broken)
    record, error = encode([chunk("client", 1001, b"secret: s3cr3\n")], redact=redact)
    assert record == record | expected
    assert (
        error["event"] == "error" and error["cause"] == "encode" and "record 1" in error["message"]
    )


def test_deeply_nested_json_is_recorded_as_text() -> None:
    """100,000 levels of nesting are too deep to check as JSON: the line is recorded as text,
    whole, without an error."""
    line = b"[" * 100_000 + b"]" * 100_000
    (record,) = encode([chunk("agent", 1001, line + b"\n")])
    assert record["text"] == line.decode()


def test_stderr_lines_are_always_text() -> None:
    """The agent's stderr is recorded as text even when a line is JSON."""
    (record,) = encode([chunk("stderr", 1001, b'{"log":1}\n')])
    assert record["text"] == '{"log":1}'
