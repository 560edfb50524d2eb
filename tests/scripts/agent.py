"""A scripted ACP agent for the recorder tests: sends a file, keeps what it receives.

    agent.py [--send FILE] [--received FILE] [--stderr FILE] [--exit N] [--ready]
             [--crash-after N] [--kill-self SIGNUM] [--ignore-eof] [--ignore-term]
             [--generate N] [--gate FILE] [--pid-file FILE] [--child]

It writes FILE to stdout in chunks of varying size (and --stderr FILE to stderr) while it
reads stdin to EOF into --received; then it says `agent: stdin closed` on stderr and exits
with --exit (default 0). --ready first writes one `{"ready":true}` line. --crash-after N
exits at once with --exit after N bytes of FILE; --kill-self kills itself with a signal at
the end; --ignore-eof waits forever after stdin's EOF; --ignore-term ignores SIGTERM.
--generate N writes N more bytes of `x` without a newline (never holding them), --gate waits
for FILE to exist before sending anything (after --ready; stdin is read meanwhile), --pid-file writes the agent's pid
(and its child's, one per line) and --child starts a child in the agent's process group that
ignores SIGTERM and keeps the agent's stdio open until it is killed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time


def write_all(fd: int, data: bytes, seed: int) -> None:
    chance = random.Random(seed)
    view = memoryview(data)
    while view:
        size = chance.choice((1, 7, 100, 4096, 65536, 1 << 20))
        view = view[os.write(fd, view[:size]) :]


def send(data: bytes, generate: int, gate: str | None) -> None:
    while gate and not os.path.exists(gate):  # stdin is read meanwhile
        time.sleep(0.01)
    write_all(1, data, 2)
    piece = b"x" * (1 << 20)
    while generate > 0:
        write_all(1, piece[:generate], 6)
        generate -= len(piece)


def start_child() -> int:
    """A child in our process group that ignores SIGTERM and holds our stdio open."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code]).pid


def read_to_eof(fd: int, path: str | None) -> None:
    out = open(path, "wb") if path else None  # noqa: SIM115 - closed below
    while chunk := os.read(fd, 1 << 16):
        if out:
            out.write(chunk)
    if out:
        out.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--send", "--received", "--stderr"):
        parser.add_argument(name)
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--crash-after", type=int)
    parser.add_argument("--kill-self", type=int)
    parser.add_argument("--generate", type=int, default=0)
    parser.add_argument("--gate")
    parser.add_argument("--pid-file")
    for name in ("--ready", "--ignore-eof", "--ignore-term", "--child"):
        parser.add_argument(name, action="store_true")
    args = parser.parse_args()
    # SIGINT ends this agent as the kernel's default does, not through Python's handler: that
    # runs later, in the main thread, and on CPython 3.11 a second thread starting as the
    # signal comes can leave it pending while the main thread blocks in its read of stdin
    # (seen under strace: the tap forwarded SIGINT at once, the agent never ended).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # tests may limit the recorder's
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = [os.getpid()]
    if args.child:
        pids.append(start_child())
    if args.pid_file:
        with open(args.pid_file + ".tmp", "w") as out:
            out.write("".join(f"{pid}\n" for pid in pids))
        os.replace(args.pid_file + ".tmp", args.pid_file)
    if args.ready:
        write_all(1, b'{"ready":true}\n', 0)
    data = open(args.send, "rb").read() if args.send else b""  # noqa: SIM115
    if args.crash_after is not None:
        write_all(1, data[: args.crash_after], 1)
        os._exit(args.exit)
    sender = threading.Thread(target=send, args=(data, args.generate, args.gate))
    sender.start()
    if args.stderr:
        write_all(2, open(args.stderr, "rb").read(), 3)  # noqa: SIM115
    read_to_eof(0, args.received)
    sender.join()
    with contextlib.suppress(OSError):  # nobody reads our stderr (the recorder died): stay
        write_all(2, b"agent: stdin closed\n", 4)
    while args.ignore_eof:
        signal.pause()
    if args.kill_self:
        os.kill(os.getpid(), args.kill_self)
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
