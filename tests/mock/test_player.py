"""The player's clock and the process start it times a waiting initialize from."""

from __future__ import annotations

import io
import time
from typing import Any

import orjson

from acp_trace.demo.rpc import Endpoint
from acp_trace.demo.window import Reply, Window
from acp_trace.mock.player import Player, _Clock
from acp_trace.mock.recording import Line
from acp_trace.mock.server import process_start
from acp_trace.mock.windows import OTHER, step_of


def test_a_line_is_due_its_recorded_offset_divided_by_the_speed() -> None:
    """At speed 2 a line recorded 2 s after the request is due 1 s after the live request."""
    clock = _Clock(speed=2.0, live=10.0, rec=1_000_000_000)
    assert clock.due(3_000_000_000) == 11.0
    assert clock.due(None) is None
    clock.rebase(20.0, 5_000_000_000)
    assert clock.due(6_000_000_000) == 20.5
    clock.rebase(30.0, None)  # an answer recorded without a time keeps the old anchor
    assert clock.due(6_000_000_000) == 20.5


def test_speed_zero_and_untimed_recordings_never_wait() -> None:
    """--speed 0, or a recording without timestamps, makes no line due later."""
    assert _Clock(speed=0.0, live=10.0, rec=0).due(5_000_000_000) is None
    assert _Clock(speed=1.0, live=10.0, rec=None).due(5_000_000_000) is None


def test_process_start_is_before_now() -> None:
    """The process started before this test ran, and within the test session's lifetime."""
    start = process_start()
    assert start <= time.monotonic()
    assert time.monotonic() - start < 24 * 3600


class Writes(io.RawIOBase):
    """A stdout that keeps each write apart, as the tap's reads of a pipe would see them."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append(bytes(data))
        return len(data)


def _line(seq: int, t_ns: int, msg: dict[str, Any]) -> Line:
    return Line(seq, t_ns, "msg", orjson.dumps(msg), msg)


def test_lines_recorded_in_one_read_are_written_in_one_write() -> None:
    """A response and the update the agent wrote with it (one read at the tap: the same time)
    go out in one write, so a client cannot send its next request between them; a line
    recorded later is a write of its own."""
    update = {"sessionUpdate": "available_commands_update", "availableCommands": []}
    note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}
    reply = _line(2, 5_000, {"jsonrpc": "2.0", "id": 1, "result": {}})
    same = _line(3, 5_000, note | {"params": {"sessionId": "s", "update": update}})
    later = _line(4, 9_000, note | {"params": {"sessionId": "s", "update": update}})
    out = Writes()
    player = Player(
        Endpoint(io.BytesIO(), out),  # type: ignore[arg-type]
        io.BytesIO(),
        speed=0.0,
        answer_timeout=1.0,
        log=lambda _text: None,
    )
    window = Window("s", OTHER, [], reply=Reply(item=reply), after=[step_of(same), step_of(later)])
    player.play(window, 1_000, 1, time.monotonic())
    assert out.chunks == [reply.data + b"\n" + same.data + b"\n", later.data + b"\n"]
