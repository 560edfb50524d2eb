"""Regenerate the sample traces and their README: `python sample_traces/make_samples.py [NAME...]`.

Every trace is made through `acp-trace record`: the real agents (pinned, installed by
tests/peers/install_peers.sh into $ACP_TRACE_CACHE or ~/.cache/acp-trace) with 200-turn
fabricated histories, in a loopback-only network namespace and a mount namespace where the fake
cwd /home/user/project exists, with HOME under /tmp/acp-trace-samples; and the demo agent,
correct and with each fault. The header's `command` and `cwd` are rewritten to portable
values (and the peers' install folder in stderr lines), and the script refuses to keep a trace that names this machine's home, user or host.
Needs root (unshare), node and npm for the real agents.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "peers"))
import peerlib  # noqa: E402

import acp_trace  # noqa: E402
from acp_trace.demo.agent import FAULTS  # noqa: E402
from acp_trace.demo.fidelity_faults import FIDELITY_FAULTS  # noqa: E402
from acp_trace.demo.run import acp_trace_command as acp  # noqa: E402

WORK = Path("/tmp/acp-trace-samples")
FAKE_CWD = "/home/user/project"
PEER_SID = "0198c0de-0000-7000-8000-000000000200"
PEER_TURNS = 200
# The correct demo samples open the agent's session from before (sess_demo, its fabricated
# history) without replay, prompt on it (so the latency chart has prompt turns: first chunk, end
# of turn, and the replay a live source), then resume or load it.
PROMPT = ("--prompt", "Summarize the replayed history in one line.")
OPENED = ("--session", "sess_demo", *PROMPT)
# A new session and two prompts: all of its history is in the trace (`source_complete`).
TWO_TURNS = (*PROMPT, "--prompt", "Then name the files it touched.")
# The whole chain runs where /home/user/project exists: a private tmpfs on /home.
WITH_FAKE_CWD = (
    "unshare",
    "-m",
    "--",
    "sh",
    "-c",
    'mount -t tmpfs tmpfs /home && mkdir -p "$1" && cd "$1" && shift && exec "$@"',
    "sh",
    FAKE_CWD,
)


@dataclass(frozen=True)
class Sample:
    """One trace: a real agent (`peer`) or the demo agent (`agent` options), and what it shows."""

    name: str
    says: str
    protocol: int = 2
    peer: str | None = None
    agent: tuple[str, ...] = ()
    client: tuple[str, ...] = ("--session", "sess_demo")
    ok_exit: tuple[int, ...] = (0,)
    extra: dict[str, str] = field(default_factory=dict)
    peer_client: tuple[str, ...] = ()  # more demo-client options for a real agent
    resumes: int = 1  # a real agent's resumes or loads


PEERS = [
    Sample(
        "codex-acp-rs-v1-load",
        "codex-acp 0.16.0 (Rust): v1 session/load, 2 chunks per turn",
        1,
        "codex-acp-rs",
    ),
    Sample("codex-acp-ts-v1-load", "codex-acp 2.6.0: v1 session/load", 1, "codex-acp-ts"),
    Sample(
        "codex-acp-ts-v2-resume",
        "codex-acp 2.6.0: v2 resume with replay, no marker "
        "(`unmarked`), notice/session_info_update/state_update after the replay",
        2,
        "codex-acp-ts",
    ),
    Sample(
        "gemini-cli-v1-load",
        "gemini-cli 0.61.0: v1 load that responds after the first "
        "replayed update, then sends the rest (`load-updates-after-response`)",
        1,
        "gemini-cli",
    ),
    Sample(
        "claude-agent-acp-v2-resume",
        "claude-agent-acp 0.101.0: v2 resume, replay done in "
        "a few ms, response over a second later (the gap the marker exposes); stderr has its "
        "per-phase timings",
        2,
        "claude-agent-acp",
    ),
    Sample(
        "claude-agent-acp-v1-load-air",
        "claude-agent-acp 0.101.0: two v1 loads for a client that asks for JetBrains AIR's "
        "`loadReplayEnd`: each ends its replay with the vendor event, the load's marker "
        "(`marker_ms`, `gap_source` marker); the first response comes seconds later (the "
        "Claude Code CLI starts), the second at once",
        1,
        "claude-agent-acp",
        peer_client=("--air",),
        resumes=2,
    ),
    Sample(
        "claude-agent-acp-v2-resume-air",
        "claude-agent-acp 0.101.0: v2 resume from the start for a client that asks for "
        "JetBrains AIR's `loadReplayEnd`: no replay_complete (`unmarked`), the gap measured "
        "from the vendor event (`gap_source` vendor:jetbrains.air.loadReplayEnd)",
        2,
        "claude-agent-acp",
        peer_client=("--air",),
    ),
]
DEMO = [
    Sample(
        "demo-v2-complete",
        "demo agent, v2: a session from before (200 turns) opened without replay and a "
        "prompt, then its replay (the history and the prompt's turn), marker, snapshot, "
        "response (`complete`)",
        agent=("--turns", "200"),
        client=OPENED,
    ),
    Sample(
        "demo-v1-load",
        "demo agent, v1: a session from before (200 turns) opened by session/resume and a "
        "prompt, then its load (`v1_loaded`)",
        1,
        agent=("--turns", "200"),
        client=OPENED,
    ),
    Sample(
        "demo-v2-children",
        "demo agent, v2: a session from before opened without replay and a prompt, then a "
        "replay with two child sessions, each announced, replayed and marked",
        agent=("--turns", "50", "--children", "2"),
        client=OPENED,
    ),
    Sample(
        "demo-v2-cold-start",
        "demo agent, v2: a session from before opened without replay and a prompt, then 5 "
        "resumes with a cold-start gap drawn from lognormal(0.7, 0.5) s between marker and "
        "response",
        agent=("--turns", "50", "--gap", "lognormal:0.7,0.5", "--seed", "7"),
        client=(*OPENED, "--resumes", "5"),
    ),
    Sample(
        "demo-v2-new-session",
        "demo agent, v2: a new session and two prompts, then its replay: the session's own two "
        "turns, all of its history in the trace (`source_complete`)",
        client=TWO_TURNS,
    ),
]
# Per fault: extra demo-agent options, then Sample fields that differ from the default.
FAULT_AGENT: dict[str, tuple[str, ...]] = {
    "load-updates-after-response": ("--turns", "20"),
    "child-marker-before-announce": ("--turns", "5", "--children", "1"),
}
FAULT_ARG = {"truncate": "3"}  # the `:N` of a fault that needs one
FAULT_SAMPLE: dict[str, dict[str, Any]] = {
    "load-updates-after-response": {"protocol": 1},
    "marker-unexpected": {"client": ("--cursor", "none")},
    "replay-without-cursor": {"client": ("--session", "sess_demo", "--cursor", "none")},
    "crash-mid-replay": {"ok_exit": (1,)},
    # the fidelity faults: a new session and two turns, the source of its replay (complete)
    **{fault: {"client": TWO_TURNS} for fault in FIDELITY_FAULTS},
}


def fault_samples() -> list[Sample]:
    """One demo trace per injectable fault."""
    return [
        Sample(
            f"demo-fault-{fault}",
            f"fault `{_spec(fault)}`: {text}",
            agent=(*FAULT_AGENT.get(fault, ("--turns", "5")), "--fault", _spec(fault)),
            **FAULT_SAMPLE.get(fault, {}),
        )
        for fault, text in FAULTS.items()
    ]


def _spec(fault: str) -> str:
    arg = FAULT_ARG.get(fault)
    return f"{fault}:{arg}" if arg else fault


def shown(argv: list[str]) -> str:
    """A command as a person would type it."""
    text = shlex.join(argv).replace(shlex.join(acp()), "acp-trace")
    return text.replace(str(peerlib.cache_root()), "~/.cache/acp-trace/peers")


def own_session(sample: Sample) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The demo agent's and client's options, with session ids of the sample's own: the
    analyzer takes equal ids in traces analyzed together (`acp-trace check sample_traces/`)
    for one session, whose replays it compares (rules.md "Replay fidelity")."""
    sid = "sess_" + sample.name.removeprefix("demo-").removeprefix("fault-").replace("-", "_")
    if "--session" in sample.client:
        client = tuple(sid if arg == "sess_demo" else arg for arg in sample.client)
        return ("--session", sid, *sample.agent), client
    return ("--new-session-prefix", f"{sid}_", *sample.agent), sample.client


def make_demo(sample: Sample, out: Path) -> str:
    agent_args, client_args = own_session(sample)
    agent = acp("demo-agent", *agent_args)
    tap = acp("record", "-o", out.name, "--", *agent)
    client = acp(
        "demo-client",
        "--protocol",
        str(sample.protocol),
        "--cwd",
        FAKE_CWD,
        *client_args,
        "--",
        *tap,
    )
    done = subprocess.run(client, cwd=out.parent, capture_output=True, check=False)
    if done.returncode not in sample.ok_exit:
        raise SystemExit(f"{sample.name}: exit {done.returncode}: {done.stderr.decode()}")
    fix_header(out, ["acp-trace", "demo-agent", *agent_args])
    return shown(client)


def make_peer(sample: Sample, out: Path) -> str:
    assert sample.peer is not None
    root = WORK / sample.name
    shutil.rmtree(root, ignore_errors=True)
    env = peerlib.fabricate(sample.peer, root, PEER_SID, FAKE_CWD, PEER_TURNS)
    run = peerlib.record(
        sample.peer,
        root,
        env,
        sid=PEER_SID,
        cwd=FAKE_CWD,
        protocol=sample.protocol,
        resumes=sample.resumes,
        trace=out,
        wrap=WITH_FAKE_CWD,
        client_args=sample.peer_client,
    )
    if run.client_exit != 0 or run.same_bytes() != (True, True):
        raise SystemExit(f"{sample.name}: exit {run.client_exit}: {run.client_output}")
    fix_header(out, [shown([c]) for c in peerlib.command(sample.peer)])
    home = f"HOME={root}/home" + (
        f" CODEX_HOME={root}/codex-home" if "codex" in sample.name else ""
    )
    return (
        f"{home} netns-run.sh acp-trace demo-client --protocol {sample.protocol} "
        f"--session {PEER_SID} --cwd {FAKE_CWD}"
        + (f" --resumes {sample.resumes}" if sample.resumes != 1 else "")
        + "".join(f" {arg}" for arg in sample.peer_client)
        + f" -- acp-trace record -o {out.name} -- "
        f"{shown(peerlib.command(sample.peer))}  # history: {PEER_TURNS} turns"
    )


def fix_header(path: Path, command: list[str]) -> None:
    """Portable header: the agent command as typed and the fake cwd; then a privacy check."""
    first, rest = path.read_bytes().split(b"\n", 1)
    head = orjson.loads(first)
    head.update(command=command, cwd=FAKE_CWD)
    # an agent's stderr may name where it is installed (claude-agent-acp's failed
    # `claude auth status`): written as the portable path, as in the header
    cache, portable = str(peerlib.cache_root()).encode(), b"~/.cache/acp-trace/peers"
    rest = b"\n".join(
        line.replace(cache, portable) if b'"src":"stderr"' in line else line
        for line in rest.split(b"\n")
    )
    data = orjson.dumps(head) + b"\n" + rest
    host = socket.gethostname()
    secrets = {str(Path.home()), f"/{getpass.getuser()}/", str(HERE.parent)}
    for secret in secrets | ({host} if len(host) >= 4 else set()):  # "vm" is no secret
        if secret.encode() in data:
            raise SystemExit(f"{path.name}: names {secret!r}; not kept")
    path.write_bytes(data)
    path.chmod(0o644)


def describe(analysis: acp_trace.Analysis, path: Path) -> tuple[str, str]:
    """Outcomes and finding rule ids as the analyzer sees them in the whole folder (as
    `acp-trace check sample_traces/` does: a replay's source is looked for in every trace)."""
    rows = analysis.replays.filter(pl.col("trace") == str(path))
    outcomes = ", ".join(f"{s}: {o}" for s, o in rows.select("session", "outcome").iter_rows())
    found = analysis.findings().filter(pl.col("trace") == str(path))
    rules = sorted(set(found["rule"].to_list()))
    return outcomes or "-", ", ".join(rules) or "-"


INTRO = """# Sample traces

Recordings made through `acp-trace record` (trace format v1, docs/trace-format.md), regenerated
by `python sample_traces/make_samples.py` (this README included; `make_samples.py NAME...` remakes
single traces). Real agents replay a fabricated 200-turn history (tests/peers/)
in a loopback-only network namespace with HOME under /tmp/acp-trace-samples; the demo agent
(`acp-trace demo-agent`) shows the correct v1 and v2 shapes and one trace per injectable fault.
The header's `command` is the agent command as typed and its `cwd` the fake /home/user/project
(the agents ran there, in a private mount namespace). Try:

    acp-trace replays sample_traces/
    acp-trace check sample_traces/
"""


def kept_commands() -> dict[str, str]:
    """The commands of the README as it is, for the samples a partial run keeps."""
    readme = HERE / "README.md"
    text = readme.read_text() if readme.exists() else ""
    return dict(re.findall(r"^- `([^`]+)`: `(.*)`$", text, flags=re.MULTILINE))


def write_readme(made: dict[str, tuple[Sample, str]]) -> None:
    lines = [
        INTRO,
        "\n## Traces\n\n",
        "| trace | what it shows | outcomes (session: outcome) | findings |\n",
        "|---|---|---|---|\n",
    ]
    analysis = acp_trace.analyze(HERE)
    for name, (sample, _cmd) in made.items():
        outcomes, rules = describe(analysis, HERE / f"{name}.jsonl")
        lines.append(f"| `{name}.jsonl` | {sample.says} | {outcomes} | {rules} |\n")
    lines.append(
        "\n## Commands\n\nEach made by `python sample_traces/make_samples.py NAME`, which runs:\n\n"
    )
    for name, (_sample, cmd) in made.items():
        lines.append(f"- `{name}`: `{cmd}`\n")
    (HERE / "README.md").write_text("".join(lines))


def main(names: list[str]) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    everything = [*PEERS, *DEMO, *fault_samples()]
    made: dict[str, tuple[Sample, str]] = {}
    kept = kept_commands()
    for sample in everything:
        out = HERE / f"{sample.name}.jsonl"
        if names and sample.name not in names:
            if out.exists():
                made[sample.name] = (sample, kept.get(sample.name, "(kept)"))
            continue
        print(f"making {out.name}", file=sys.stderr)
        make = make_peer if sample.peer else make_demo
        made[sample.name] = (sample, make(sample, out))
    write_readme(made)


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("make_samples.py needs root for unshare (network and mount namespaces)")
    peerlib.install()
    main(sys.argv[1:])
