"""A scripted editor for the recorder tests: starts a command and talks to it over stdio.

    client.py [--send FILE] [--received FILE] [--keep-open | --close-on-ready]
              [--signal-on-ready SIGNUM] [--never-read] [--pid-file FILE] -- COMMAND [ARGS...]

It writes FILE to the command's stdin in chunks of varying size and closes it (with
--keep-open only once the command's stdout is at EOF, with --close-on-ready once the first
line of output arrived), while it reads the command's stdout to EOF into --received. With
--signal-on-ready it sends SIGNUM to the command as soon as the first line of output arrives. With --never-read it never reads the command's stdout (a
stuck editor); --pid-file writes the command's pid. It exits with the command's exit code
(128+N after signal N).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading


def send(fd: int, data: bytes, keep_open: threading.Event | None) -> None:
    chance = random.Random(5)
    view = memoryview(data)
    try:
        while view:
            size = chance.choice((1, 3, 64, 4096, 65536, 1 << 20))
            view = view[os.write(fd, view[:size]) :]
    except BrokenPipeError:
        pass
    if keep_open is not None:
        keep_open.wait()
    os.close(fd)


def receive(fd: int, path: str | None, proc: subprocess.Popen[bytes], signum: int | None) -> None:
    """Read to EOF; READY is set once the first line has arrived (or at EOF)."""
    out = open(path, "wb") if path else None  # noqa: SIM115 - closed below
    while chunk := os.read(fd, 1 << 16):
        if not READY.is_set() and b"\n" in chunk:
            READY.set()
            if signum is not None:
                proc.send_signal(signum)
        if out:
            out.write(chunk)
    if out:
        out.close()
    READY.set()


READY = threading.Event()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--send")
    parser.add_argument("--received")
    parser.add_argument("--keep-open", action="store_true")
    parser.add_argument("--close-on-ready", action="store_true")
    parser.add_argument("--signal-on-ready", type=int)
    parser.add_argument("--never-read", action="store_true")
    parser.add_argument("--pid-file")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    data = open(args.send, "rb").read() if args.send else b""  # noqa: SIM115
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    done = threading.Event() if args.keep_open else READY if args.close_on_ready else None
    stdin_fd = os.dup(proc.stdin.fileno())
    proc.stdin.close()
    sender = threading.Thread(target=send, args=(stdin_fd, data, done))
    sender.start()
    if args.pid_file:
        with open(args.pid_file, "w") as out:
            out.write(f"{proc.pid}\n")
    if args.never_read:
        proc.wait()
    else:
        receive(proc.stdout.fileno(), args.received, proc, args.signal_on_ready)
    if done is not None:
        done.set()
    sender.join()
    code = proc.wait()
    proc.stdout.close()
    sys.exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
