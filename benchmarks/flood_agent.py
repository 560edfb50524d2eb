"""A stand-in ACP v2 agent for bench_watch.py: answers `initialize` and `session/new`, and
replays each `session/resume` as `--per-replay` history updates sent at `--rate` a second
(in 1 ms ticks), then its `replay_complete` marker, then (`--gap` seconds later) the response.
With `--quiet SECONDS`, it answers nothing of that and writes one stderr line each SECONDS
while stdin is open (quiet traffic). Standard library only, unbuffered os.write.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def update(session: str, n: int) -> bytes:
    text = f"chunk {n} of the replayed history, as an agent streams it"
    msg = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"m{n // 50}",
                "content": {"type": "text", "text": text},
            },
        },
    }
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def replay(session: str, count: int, rate: float) -> None:
    start = time.monotonic()
    sent = 0
    while sent < count:
        due = min(count, int((time.monotonic() - start) * rate) + 1)
        if due > sent:
            write(b"".join(update(session, n) for n in range(sent, due)))
            sent = due
        else:
            time.sleep(0.001)


def answer(rid: object, result: object) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=10_000.0)
    parser.add_argument("--per-replay", type=int, default=5_000)
    parser.add_argument("--gap", type=float, default=0.05)
    parser.add_argument("--quiet", type=float, default=0.0)
    args = parser.parse_args()
    if args.quiet:
        os.set_blocking(0, False)
        while True:
            try:
                if sys.stdin.buffer.read() == b"":
                    return
            except (BlockingIOError, TypeError):
                pass
            os.write(2, json.dumps({"t": time.monotonic_ns()}).encode() + b"\n")
            time.sleep(args.quiet)
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            answer(rid, {"protocolVersion": 2, "agentCapabilities": {}, "authMethods": []})
        elif method == "session/new":
            answer(rid, {"sessionId": "flood"})
        elif method == "session/resume":
            session = msg["params"]["sessionId"]
            replay(session, args.per_replay, args.rate)
            write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {
                            "sessionId": session,
                            "update": {"sessionUpdate": "replay_complete"},
                        },
                    }
                ).encode()
                + b"\n"
            )
            time.sleep(args.gap)
            answer(rid, {})


if __name__ == "__main__":
    main()
