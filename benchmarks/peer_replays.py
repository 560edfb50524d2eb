"""Real agents replaying a fabricated history through the tap, for the benchmarks (issue 42:
the real 200-turn replays of claude-agent-acp, codex-acp and gemini-cli).

    python benchmarks/peer_replays.py /tmp/acp-weight-bench            # 200 turns each
    python benchmarks/peer_replays.py OUT --turns 50 --peers gemini-cli

For each peer: the pinned agent (tests/peers/install_peers.sh installs what is missing into
~/.cache/acp-trace/peers), a history of `--turns` turns fabricated by its own fabricator
(tests/peers/fixtures/mk_*.py) in a private HOME under OUT, then demo-client -> `acp-trace
record` -> the agent in a loopback-only network namespace (`unshare -n`), resuming the session
once, as the peer tests do (tests/peers/peerlib.py). The traces are OUT/NAME.jsonl; prints a
JSON object: each peer's trace. Needs node, npm and a usable `unshare -n` (root).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "peers"))
import peerlib  # noqa: E402

SID = "0198c0de-0000-7000-8000-000000000200"
# each peer with the protocol it is recorded with (the sample traces' choice)
PEERS = {"claude-agent-acp": 2, "codex-acp-rs": 1, "gemini-cli": 1}


def record(name: str, out: Path, turns: int) -> Path:
    """Record `name` replaying a `turns`-turn history; its trace is OUT/NAME.jsonl."""
    root = out / f"work-{name}"
    shutil.rmtree(root, ignore_errors=True)
    project = root / "project"
    project.mkdir(parents=True)
    env = peerlib.fabricate(name, root, SID, str(project), turns)
    trace = out / f"{name}.jsonl"
    trace.unlink(missing_ok=True)
    run = peerlib.record(
        name, root, env, sid=SID, cwd=str(project), protocol=PEERS[name], trace=trace
    )
    if run.client_exit != 0 or not trace.is_file():
        raise SystemExit(f"{name}: the recording failed ({run.client_exit}):\n{run.client_output}")
    shutil.rmtree(root, ignore_errors=True)
    return trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="where the traces go (outside the repository)")
    parser.add_argument("--turns", type=int, default=200, help="turns of history (default 200)")
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=list(PEERS))
    args = parser.parse_args(argv)
    reason = peerlib.missing_tools()
    if reason is not None:
        raise SystemExit(f"the peers cannot run here: {reason}")
    peerlib.install(args.peers)
    args.out.mkdir(parents=True, exist_ok=True)
    traces = {name: str(record(name, args.out.resolve(), args.turns)) for name in args.peers}
    print(json.dumps(traces))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
