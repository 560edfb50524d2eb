"""SSE events are cut out of a stream's chunks wherever the chunks split them."""

from __future__ import annotations

import pytest

from acp_trace.remote.sse import EventParser

STREAM = (
    b": keep-alive\n\n"
    b'id: 7\nevent: message\ndata: {"a":1}\n\n'
    b"data: line one\r\ndata: line two\r\n\r\n"
    b"data:no-space\r\rid\n: comment\n\n"
    b": keep-alive\n\n"
)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_events_are_the_same_whatever_the_chunks(size: int) -> None:
    """Data lines joined by LF, ids and names kept, CR, LF and CRLF endings alike (a CRLF
    split across chunks is one ending), comment-only blocks counted as keep-alives."""
    parser = EventParser()
    events = []
    for i in range(0, len(STREAM), size):
        events += parser.feed(STREAM[i : i + size])
    assert [(e.data, e.id, e.name) for e in events] == [
        (b'{"a":1}', "7", "message"),
        (b"line one\nline two", None, None),
        (b"no-space", None, None),
    ]
    assert parser.keepalives == 2
    assert parser.pending == 0
    assert events[0].size == len(b'id: 7\nevent: message\ndata: {"a":1}\n\n')


def test_an_event_cut_short_is_pending() -> None:
    """What of an event has come without its blank line is held and counted, not an event."""
    parser = EventParser()
    assert parser.feed(b'data: {"half":') == []
    assert parser.pending == len(b'data: {"half":')
