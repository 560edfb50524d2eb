"""`acp-trace watch --format jsonl`: the engine's events as JSON lines, for a script, a CI
log or `jq` (one line per event, written and flushed as it happens; trace text escaped)."""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson

from acp_trace.render.escape import json_safe
from acp_trace.watch.engine import Engine, Event

POLL_SECONDS = 0.05  # how often the files are looked at


def event_line(event: Event) -> str:
    """One event as a line of JSON: C1, bidi and other invisible characters escaped too."""
    return json_safe(orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS).decode()) + "\n"


def run_jsonl(
    engine: Engine,
    write: Callable[[str], None],
    *,
    until_ended: bool = False,
    once: bool = False,
    poll: float = POLL_SECONDS,
) -> None:
    """Print the events until stopped (KeyboardInterrupt, a closed pipe). `once`: read what
    the files hold now, decide it, print and return. `until_ended`: return once every trace
    followed has ended (its agent exited) and its last verdicts are printed."""
    while True:
        events = engine.step()
        for event in events:
            write(event_line(event))
        if once and not events and engine.judge_idle():
            return
        if until_ended and engine.all_ended():
            return
        time.sleep(poll)
