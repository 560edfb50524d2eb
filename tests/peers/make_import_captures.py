"""Record the real-tool captures of tests/data/imports/ (thinkwell*.jsonl, acpx-*.jsonl).

    python tests/peers/make_import_captures.py

Runs @thinkwell/conductor 0.5.7 and acpx 0.19.1 (installed by install_peers.sh) against
`acp-trace demo-agent` in the loopback-only netns with a private HOME, and writes what they
wrote. The project folder is /tmp/acp-trace-project and sessions have fixed ids, so the files
name nothing of the machine; the script refuses to write a capture that holds this machine's
home folder, user or host name.
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
import tempfile
from pathlib import Path

import peerlib

DATA = peerlib.REPO / "tests" / "data" / "imports"
PROJECT = "/tmp/acp-trace-project"


def _check(name: str, data: bytes) -> bytes:
    text = data.decode("utf-8", "replace")
    for secret in (str(Path.home()), getpass.getuser(), socket.gethostname()):
        if secret and len(secret) > 3 and secret in text:
            raise SystemExit(f"{name}: holds {secret!r}; not written")
    return data


def main() -> int:
    peerlib.install(peerlib.TOOLS)
    os.makedirs(PROJECT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, protocol, faults in (
            ("thinkwell.jsonl", 2, ("request-before-marker",)),
            ("thinkwell-v1.jsonl", 1, ()),
        ):
            trace = root / name
            run = peerlib.run_thinkwell(root, trace, sid="sess-tw", protocol=protocol,
                                        cwd=PROJECT, faults=faults)  # fmt: skip
            if run.client_exit != 0:
                raise SystemExit(run.client_output)
            (DATA / name).write_bytes(_check(name, trace.read_bytes()))
        for name, commands in (
            ("acpx-exec.jsonl", [["exec", "hello there"]]),
            (
                "acpx-resume.jsonl",
                [["sessions", "new", "--resume-session", "sess-ax"], ["prompt", "hi again"]],
            ),
        ):
            code, out, err = peerlib.run_acpx(root / name, sid="sess-ax", cwd=PROJECT,
                                              commands=commands)  # fmt: skip
            if code != 0:
                raise SystemExit(err)
            (DATA / name).write_bytes(_check(name, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
