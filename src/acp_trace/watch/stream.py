"""`acp-trace watch --format jsonl`: the engine's events as JSON lines, for a script, a CI
log or `jq` (one line per event, written and flushed as it happens; trace text escaped), in
the vocabulary of `replays --format json`: JSON-RPC ids as written, floats rounded alike."""

from __future__ import annotations

import time
from collections.abc import Callable

from acp_trace.jsonrpc import id_json, json_bytes, loads_exact
from acp_trace.render.escape import json_safe
from acp_trace.render.report.formats import rounded_float
from acp_trace.watch.engine import Engine, Event

POLL_SECONDS = 0.05  # how often the files are looked at


def event_line(event: Event) -> str:
    """One event as a line of JSON: floats rounded as `replays --format json` rounds them, a
    request id as its JSON value, text a trace holds that UTF-8 cannot (a lone surrogate from
    a non-UTF-8 byte) as its escape, C1, bidi and other invisible characters escaped too."""
    value = {k: rounded_float(v) if isinstance(v, float) else v for k, v in event.items()}
    rid = value.get("request_id")
    if isinstance(rid, str):
        try:
            value["request_id"] = loads_exact(rid)  # id_key's text: 1 and "1" apart, exact
        except ValueError:
            value["request_id"] = id_json(rid)
    return json_safe(json_bytes(value).decode()) + "\n"


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
        if once and not events and engine.judge_idle() and not engine.order.holding():
            return
        if until_ended and engine.all_ended():
            return
        time.sleep(poll)
