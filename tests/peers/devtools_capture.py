"""acp-devtools 0.4.0 (maksugr/acp-devtools, built from source) as a capturing proxy in front
of `acp-trace record` and a real agent, and its own `export` of what it captured.

The chain, in the loopback-only netns with a private HOME (peerlib):

    demo-client --save ... -- acp-devtools proxy --no-ws --save-to DB \\
        acp-trace record -o TRACE -- AGENT...

so acp-devtools and the tap record the same session: the tap next to the agent, acp-devtools
next to the client. acp-devtools is looked for in $ACP_TRACE_CACHE/acp-devtools/src-0.4.0
(~/.cache/acp-trace/...), built there by install_devtools.sh; `missing()` says why it cannot
run. It runs on the system `node` (better-sqlite3 is compiled against that node).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import peerlib

VERSION = "0.4.0"
INSTALL = peerlib.HERE / "install_devtools.sh"
# (the name in an export's file name, the export command's options): every layout `export`
# writes (indented by default, `--no-pretty` compact) and `--raw` (no redaction)
EXPORTS = {"pretty": (), "compact": ("--no-pretty",), "raw": ("--raw",)}


def source_dir() -> Path:
    """Where install_devtools.sh builds acp-devtools."""
    return peerlib.cache_root().parent / "acp-devtools" / f"src-{VERSION}"


def cli() -> list[str]:
    """The argv that runs the acp-devtools CLI."""
    return ["node", str(source_dir() / "packages" / "cli" / "dist" / "index.js")]


def missing() -> str | None:
    """Why acp-devtools cannot run here, or None."""
    if shutil.which("node") is None:
        return "`node` is not installed"
    if not (source_dir() / "packages" / "cli" / "dist" / "index.js").exists():
        return f"acp-devtools {VERSION} is not built in {source_dir()} (install_devtools.sh)"
    probe = subprocess.run([*cli(), "--version"], capture_output=True, check=False)
    if probe.returncode != 0 or probe.stdout.decode().strip() != VERSION:
        return f"acp-devtools does not run: {probe.stderr.decode().strip()[-300:]}"
    binding = source_dir() / "node_modules" / "better-sqlite3"
    load = f"new (require({json.dumps(str(binding))}))(':memory:')"
    probe = subprocess.run(["node", "-e", load], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"its SQLite binding does not load in this node: {probe.stderr.decode()[-300:]}"
    return None


@dataclass(frozen=True)
class Capture:
    """One run: the tap's trace, acp-devtools' database, the client's exit and output."""

    trace: Path
    db: Path
    client_exit: int
    client_output: str

    def export(self, out: Path, *options: str) -> Path:
        """acp-devtools' own `export` of the run's session (the latest in its database)."""
        subprocess.run([*cli(), "export", "--db", str(self.db), "-o", str(out), *options],
                       check=True, capture_output=True, timeout=120)  # fmt: skip
        return out


def run(
    root: Path,
    env: dict[str, str],
    agent: list[str],
    *,
    sid: str,
    cwd: str,
    protocol: int,
    resumes: int = 1,
    timeout: float = 90,
    grace: float = 20,
    client_args: tuple[str, ...] = (),
) -> Capture:
    """demo-client -> acp-devtools proxy -> acp-trace record -> `agent`, in the netns.

    The agent's command is given relative to `root` where the caller makes it so (the export
    keeps acp-devtools' `agentCommand`, the whole command line after `proxy`)."""
    db, trace = root / "devtools.db", root / "trace.jsonl"
    for old in (db, trace, root / "devtools.db-wal", root / "devtools.db-shm"):
        old.unlink(missing_ok=True)
    files = root / "capture"
    files.mkdir(parents=True, exist_ok=True)
    client = [sys.executable, "-m", "acp_trace", "demo-client", "--summary",
              "--protocol", str(protocol), "--session", sid, "--resumes", str(resumes),
              "--timeout", str(timeout), "--grace", str(grace), "--cwd", cwd,
              "--save", str(files / "client-received.bin"),
              "--save-sent", str(files / "client-sent.bin"), *client_args]  # fmt: skip
    tap = ["acp-trace", "record", "-o", trace.name, "--", *agent]
    proxy = [*cli(), "proxy", "--no-ws", "--save-to", db.name, *tap]
    path = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # acp-trace by name
    done = subprocess.run(
        [str(peerlib.NETNS_RUN), *client, "--", *proxy],
        env={**env, "PATH": path}, cwd=root, capture_output=True,
        timeout=timeout * (resumes + 2) + 60, check=False,
    )  # fmt: skip
    output = done.stdout.decode() + done.stderr.decode()
    return Capture(trace, db, done.returncode, output)
