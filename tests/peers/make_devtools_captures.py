"""Record the acp-devtools captures of tests/data/imports/ (acp-devtools-0.4.0-*.json and the
tap's trace of the same session, *.trace.jsonl).

    python tests/peers/make_devtools_captures.py [OUT_DIR] [--killed-only]

acp-devtools 0.4.0 (built by install_devtools.sh) runs as a proxy between demo-client and
`acp-trace record`, in front of a real agent (claude-agent-acp 0.101.0 with a fabricated
history; peerlib) or of demo-agent, in the loopback-only netns with a private HOME; then its
own `export` writes the session (docs/importing.md says which run gives which file). The
project folder is /tmp/acp-trace-project and the agent is started by a relative path, so the
files name nothing of the machine; a capture that holds this machine's home folder, user or
host name is refused. The killed capture is trimmed by whole messages (README.md beside it).
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import devtools_capture as dc
import peerlib

DATA = peerlib.REPO / "tests" / "data" / "imports"
PROJECT = "/tmp/acp-trace-project"
WORK = Path("/tmp/acp-devtools-capture")  # the runs' folder (the trace header's cwd)
SID = "0198c0de-0000-7000-8000-00000000a11c"
CLAUDE = "claude-agent-acp"
KEEP_HEAD, KEEP_TAIL = 40, 20  # messages kept at each end of the killed capture


def _check(name: str, data: bytes) -> bytes:
    text = data.decode("utf-8", "replace")
    for secret in (str(Path.home()), getpass.getuser(), socket.gethostname()):
        at = text.find(secret) if secret and len(secret) > 3 else -1
        if at >= 0:
            raise SystemExit(f"{name}: holds {secret!r} ({text[at - 80 : at + 80]!r}); not written")
    return data


def claude(root: Path, protocol: int, out: Path, *exports: str) -> None:
    """claude-agent-acp, two v1 loads or one v2 resume from the start, with --air."""
    env = peerlib.fabricate(CLAUDE, root, SID, PROJECT, 20)
    link = root / "agent"
    if not link.exists():
        link.symlink_to(peerlib.cache_root() / CLAUDE)  # node keeps the link's path
    entry = peerlib.PEERS[CLAUDE].entry
    agent = [
        "node",
        "--preserve-symlinks",
        "--preserve-symlinks-main",
        f"agent/node_modules/{entry}",
    ]
    got = dc.run(root, env, agent, sid=SID, cwd=PROJECT, protocol=protocol, resumes=2 if protocol == 1 else 1,
                 client_args=("--air",))  # fmt: skip
    if got.client_exit != 0:
        raise SystemExit(got.client_output)
    stem = f"acp-devtools-{dc.VERSION}-claude-v{protocol}"
    (out / f"{stem}.trace.jsonl").write_bytes(_check(stem, got.trace.read_bytes()))
    for layout in exports:
        exported = got.export(root / f"{layout}.json", *dc.EXPORTS[layout])
        (out / f"{stem}.{layout}.json").write_bytes(_check(stem, exported.read_bytes()))


def crashed(root: Path, out: Path) -> None:
    """demo-agent exits (code 3) in the middle of a v2 replay of 100 turns: acp-devtools sees
    the exit (endedAt), the resume is never answered."""
    agent = ["acp-trace", "demo-agent", "--session", "s1", "--turns", "100", "--fault",
             "crash-mid-replay"]  # fmt: skip
    got = dc.run(root, peerlib.private_env(root), agent, sid="s1", cwd=PROJECT, protocol=2)
    stem = f"acp-devtools-{dc.VERSION}-crashed"
    (out / f"{stem}.trace.jsonl").write_bytes(_check(stem, got.trace.read_bytes()))
    exported = got.export(root / "crashed.json", "--no-pretty").read_bytes()
    (out / f"{stem}.compact.json").write_bytes(_check(stem, exported))


def split_utf8(root: Path, out: Path) -> None:
    """split_utf8_agent.py right behind acp-devtools (no tap: its reads would not change the
    cut), sent one initialize by a client that then waits: the update cut inside a character
    reaches the client whole, and the capture holds U+FFFD where the character was."""
    agent = [sys.executable, str(peerlib.HERE / "split_utf8_agent.py")]
    db = root / "devtools.db"
    request = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
    script = "cat request.json; sleep 3"
    (root / "request.json").write_bytes(request)
    proxy = [*dc.cli(), "proxy", "--no-ws", "--save-to", db.name, "python3", "agent.py"]
    shutil.copy(agent[1], root / "agent.py")
    received = subprocess.run(
        [str(peerlib.NETNS_RUN), "sh", "-c", f"({script}) | \"$0\" \"$@\"", *proxy],
        env=peerlib.private_env(root), cwd=root, capture_output=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    if "\ufffd".encode() in received:
        raise SystemExit("the client got U+FFFD: the agent's bytes were not forwarded as written")
    exported = dc.Capture(root / "none", db, 0, "").export(root / "split.json", "--no-pretty")
    name = f"acp-devtools-{dc.VERSION}-split-utf8.json"
    (out / name).write_bytes(_check(name, exported.read_bytes()))


def killed(root: Path, out: Path) -> None:
    """demo-agent replays 20000 turns; the client gives up after 15 s, closes the agent's stdin
    and ends its process group 1 s later: acp-devtools dies mid-replay (no endedAt), the
    resume unanswered."""
    env = peerlib.private_env(root)
    agent = ["acp-trace", "demo-agent", "--session", "s1", "--turns", "20000"]
    got = dc.run(root, env, agent, sid="s1", cwd=PROJECT, protocol=2, timeout=15, grace=1)
    text = got.export(root / "killed.json").read_text()
    exported = json.loads(text)
    if exported["session"]["endedAt"] is not None:
        raise SystemExit("acp-devtools was not killed this time; run again")
    trimmed = trim(text, KEEP_HEAD, KEEP_TAIL)
    messages = exported["messages"]
    assert json.loads(trimmed)["messages"] == messages[:KEEP_HEAD] + messages[-KEEP_TAIL:]
    name = f"acp-devtools-{dc.VERSION}-killed.json"
    (out / name).write_bytes(_check(name, trimmed.encode()))


def trim(text: str, head: int, tail: int) -> str:
    """An indented export with only its first `head` and last `tail` messages: the text
    between messages (`},` and `{` at the array's indent) is cut there, every byte of a kept
    message stays as `export` wrote it."""
    sep = "\n        },\n        {\n"
    start = text.index('    "messages": [\n        {\n') + len('    "messages": [\n')
    end = text.rindex("\n        }\n    ]\n}") + len("\n        }")
    parts = text[start:end].split(sep)
    if len(parts) <= head + tail:
        return text
    kept = parts[:head] + parts[-tail:]
    return text[:start] + sep.join(kept) + text[end:]


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0]) if args else DATA
    reason = dc.missing()
    if reason is not None:
        raise SystemExit(reason)
    peerlib.install([CLAUDE])
    os.makedirs(PROJECT, exist_ok=True)
    shutil.rmtree(WORK, ignore_errors=True)
    for name in ("v1", "v2", "crashed", "split", "killed"):
        (WORK / name).mkdir(parents=True)
    if "--killed-only" not in sys.argv:
        claude(WORK / "v1", 1, out, "pretty")
        claude(WORK / "v2", 2, out, "compact")
        crashed(WORK / "crashed", out)
        split_utf8(WORK / "split", out)
    killed(WORK / "killed", out)
    shutil.rmtree(WORK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
