"""Real third-party ACP agents behind the tap: install, fabricate a history, record a run.

Shared by the peer tests (conftest.py) and sample_traces/make_samples.py. Every run happens in
a loopback-only network namespace (`fixtures/netns-run.sh`, with the history fabricators beside it) with a private HOME
(and CODEX_HOME) built fresh under the given folder. The chain is

    demo-client --save ... -- acp-trace record -o TRACE -- tee_agent.py IN OUT -- AGENT...

so what the client received and sent can be compared, byte for byte, with what the agent wrote
and read, as captured by tee_agent.py, independently of the tap.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = HERE / "fixtures"  # copied from the steering repo's shared/peers: no run-time dependency
NETNS_RUN = FIXTURES / "netns-run.sh"
TEE_AGENT = HERE / "tee_agent.py"
INSTALL = HERE / "install_peers.sh"


@dataclass(frozen=True)
class Peer:
    """One pinned agent: where its entry point is under node_modules and how to start it."""

    name: str
    entry: str
    node: bool = True
    args: tuple[str, ...] = ()


PEERS = {
    p.name: p
    for p in (
        Peer("codex-acp-rs", "@zed-industries/codex-acp-linux-x64/bin/codex-acp", node=False),
        Peer("codex-acp-ts", "@agentclientprotocol/codex-acp/dist/index.js"),
        Peer("gemini-cli", "@google/gemini-cli/bundle/gemini.js", args=("--experimental-acp",)),
        Peer("claude-agent-acp", "@agentclientprotocol/claude-agent-acp/dist/index.js"),
    )
}


def cache_root() -> Path:
    """$ACP_TRACE_CACHE/peers, or ~/.cache/acp-trace/peers."""
    base = os.environ.get("ACP_TRACE_CACHE") or str(Path.home() / ".cache" / "acp-trace")
    return Path(base).expanduser() / "peers"


def missing_tools() -> str | None:
    """Why peers cannot run here (no npm/node, no usable unshare), or None."""
    for tool in ("npm", "node", "unshare"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    if not NETNS_RUN.exists():
        return f"{NETNS_RUN} is missing"
    probe = subprocess.run([str(NETNS_RUN), "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"unshare -n does not work here: {probe.stderr.decode().strip()}"
    return None


def install(names: list[str] | None = None) -> None:
    """Install the pinned peers that are missing (see install_peers.sh)."""
    subprocess.run(["bash", str(INSTALL), *(names or [])], check=True)


def command(name: str) -> list[str]:
    """The argv that starts a peer."""
    peer = PEERS[name]
    entry = str(cache_root() / name / "node_modules" / peer.entry)
    return ["node", entry, *peer.args] if peer.node else [entry, *peer.args]


def fabricate(name: str, root: Path, sid: str, cwd: str, turns: int) -> dict[str, str]:
    """Build a fresh private HOME (and CODEX_HOME) under root with a history; returns the env."""
    home, codex_home = root / "home", root / "codex-home"
    for folder in (home, codex_home):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("IS_SANDBOX", "CODEX_HOME")}
    env["HOME"] = str(home)
    script = {
        "codex-acp-rs": "mk_codex_rollout.py",
        "codex-acp-ts": "mk_codex_rollout.py",
        "gemini-cli": "mk_gemini_session.py",
        "claude-agent-acp": "mk_claude_transcript.py",
    }
    target = home
    if name.startswith("codex"):
        shutil.copy(FIXTURES / "codex-config.toml", codex_home / "config.toml")
        env.update(CODEX_HOME=str(codex_home), NO_BROWSER="1")
        target = codex_home
    elif name == "gemini-cli":
        (home / ".gemini").mkdir()
        shutil.copy(FIXTURES / "gemini-settings.json", home / ".gemini" / "settings.json")
        env.update(GEMINI_API_KEY="dummy", GEMINI_CLI_NO_RELAUNCH="true")
    else:
        env.update(
            ANTHROPIC_BASE_URL="http://127.0.0.1:9",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
    make = [sys.executable, str(FIXTURES / script[name]), str(target), cwd, sid, str(turns)]
    subprocess.run(make, check=True, capture_output=True)
    return env


@dataclass(frozen=True)
class Run:
    """The files of one recorded run."""

    trace: Path
    client_received: Path
    client_sent: Path
    agent_wrote: Path
    agent_read: Path
    client_exit: int
    client_output: str

    def same_bytes(self) -> tuple[bool, bool]:
        """(agent stdout == client received, client sent == agent stdin), by sha256."""
        return (
            _sha(self.agent_wrote) == _sha(self.client_received),
            _sha(self.client_sent) == _sha(self.agent_read),
        )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(
    name: str,
    root: Path,
    env: dict[str, str],
    *,
    sid: str,
    cwd: str,
    protocol: int,
    resumes: int = 1,
    trace: Path | None = None,
    timeout: float = 240,
    wrap: tuple[str, ...] = (),
) -> Run:
    """Run demo-client -> acp-trace record -> tee_agent -> the peer, all in a loopback netns.

    `wrap` is a command prefix around the whole chain (make_samples.py uses a mount namespace).
    """
    files = root / "capture"
    files.mkdir(parents=True, exist_ok=True)
    run = Run(
        trace or root / "trace.jsonl",
        *(files / n for n in ("client-received.bin", "client-sent.bin")),
        *(files / n for n in ("agent-wrote.bin", "agent-read.bin")),
        client_exit=-1,
        client_output="",
    )
    acp = [sys.executable, "-m", "acp_trace"]
    tee = [sys.executable, str(TEE_AGENT), str(run.agent_read), str(run.agent_wrote)]
    client_opts = f"--protocol {protocol} --session {sid} --resumes {resumes} --timeout 90"
    client = [
        *acp,
        "demo-client",
        "--summary",
        *client_opts.split(),
        "--grace",
        "20",
        "--cwd",
        cwd,
        "--save",
        str(run.client_received),
        "--save-sent",
        str(run.client_sent),
    ]
    tap = [*acp, "record", "-o", str(run.trace), "--", *tee, "--", *command(name)]
    done = subprocess.run(
        [*wrap, str(NETNS_RUN), *client, "--", *tap],
        env=env,
        cwd=root,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout.decode() + done.stderr.decode()
    return replace(run, client_exit=done.returncode, client_output=output)
