"""The floor of any Python tap: forward stdin to an agent and its stdout back, record nothing.

    relay.py -- AGENT [ARGS...]

Two threads, os.read of up to 64 KiB and os.write of what was read, like the tap's pumps
without stamping, queueing or writing a trace. bench_tap.py runs it beside the direct pipe
and the tap, so the figures separate what the extra pipe hop costs from what recording costs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading


def pump(source: int, sink: int) -> None:
    while chunk := os.read(source, 65536):
        view = memoryview(chunk)
        while view:
            view = view[os.write(sink, view) :]


def main() -> int:
    command = sys.argv[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    agent_in, agent_out = proc.stdin.fileno(), proc.stdout.fileno()

    def client_side() -> None:
        pump(0, agent_in)
        proc.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=client_side, daemon=True).start()
    pump(agent_out, 1)
    return proc.wait()


if __name__ == "__main__":
    raise SystemExit(main())
