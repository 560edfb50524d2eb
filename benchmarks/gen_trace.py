"""Write large synthetic v1 traces for the analyzer benchmarks (docs/performance.md).

One connection (protocol 2) of episodes. An episode is a replaying `session/resume` of a
session with a long history (`--history` updates: user and agent messages, thoughts, chunks,
tool calls and their updates, all with messageIds), its marker, state snapshot and response,
then prompt turns (agent chunks, a tool call, a permission request, an idle state_update).
A few episodes break rules on purpose (no marker, an error, a rejected cursor, a live update
before the marker) so the replays table and the findings are not trivial.

    python benchmarks/gen_trace.py --mb 100 --out /tmp/acp-bench            # one file
    python benchmarks/gen_trace.py --mb 100 --files 10000 --history 20 ...  # many small files
    python benchmarks/gen_trace.py --codex-like --mb 150 --out /tmp/acp-bench  # one huge replay

`--codex-like` writes one v1 `session/load` of codex-acp instead, its replay about `--mb`
megabytes: a long coding session's turns (the user's prompt, the agent's reasoning, commands
run and edits made, with what they returned: runs of real source files, a few KiB to a few
MiB, now and then one over 4 MB), then the response; the shape of the 154 MB codex sessions
that grow an editor to 32 GB (issue 42).

Prints a JSON summary: the paths, bytes, lines and the expected outcome of every replay.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

WORDS = [
    "the",
    "agent",
    "reads",
    "files",
    "edits",
    "code",
    "runs",
    "tests",
    "and",
    "reports",
    "what",
    "changed",
    "in",
    "the",
    "repository",
    "before",
    "it",
    "asks",
    "for",
    "permission",
    "to",
    "write",
    "a",
    "patch",
    "that",
    "fixes",
    "the",
    "failing",
    "build",
    "step",
]
HEADER = {
    "acp_trace": 1,
    "kind": "header",
    "started_at": "2026-11-30T10:00:00.000000Z",
    "command": ["bench-agent", "--acp"],
    "cwd": "/home/dev/project",
    "pid": 4242,
    "recorder": "acp-trace bench",
    "redaction": {"policy": "none"},
}
# Outcome of an episode by a roll in [0, 100): mostly complete, some rule breakers.
FAULTS = ((84, "complete"), (90, "unmarked"), (94, "truncated"), (97, "rejected"), (100, "live"))


class Writer:
    """Numbers records (seq, t_ns, ids) and writes them to one trace file."""

    def __init__(
        self,
        path: Path,
        rng: random.Random,
        protocol: int = 2,
        info: dict[str, str] | None = None,
    ) -> None:
        self.handle = path.open("wb")
        self.rng = rng
        self.seq = 0
        self.t_ns = 0
        self.next_id = 0
        self.lines = 0
        self.handle.write(orjson.dumps(HEADER) + b"\n")
        v2 = protocol >= 2  # v1 names them clientInfo and agentInfo, with a version
        client = {"name": "bench-ed"} if v2 else {"name": "bench-ed", "version": "1.0.0"}
        rid = self.request(
            "initialize", {"protocolVersion": protocol, "info" if v2 else "clientInfo": client}
        )
        key = "info" if v2 else "agentInfo"
        result = {
            "protocolVersion": protocol,
            key: info or {"name": "bench-agent", "version": "9.9.9"},
        }
        self.send("agent", {"jsonrpc": "2.0", "id": rid, "result": result})

    def send(self, src: str, msg: dict[str, Any], dt_us: int = 40) -> None:
        self.seq += 1
        self.t_ns += self.rng.randint(1, 2 * dt_us) * 1000
        record = {"seq": self.seq, "t_ns": self.t_ns, "src": src, "msg": msg}
        self.handle.write(orjson.dumps(record) + b"\n")
        self.lines += 1

    def tap(self, event: dict[str, Any]) -> None:
        """A record of the tap itself (`eof`, `exit`)."""
        self.seq += 1
        self.t_ns += 1000
        record = {"seq": self.seq, "t_ns": self.t_ns, "src": "tap", **event}
        self.handle.write(orjson.dumps(record) + b"\n")
        self.lines += 1

    def request(self, method: str, params: dict[str, Any], src: str = "client") -> Any:
        self.next_id += 1
        rid: Any = self.next_id if src == "client" else f"a{self.next_id}"
        self.send(src, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, 500)
        return rid

    def update(self, session: str, update: dict[str, Any], dt_us: int = 40) -> None:
        params = {"sessionId": session, "update": update}
        self.send("agent", {"jsonrpc": "2.0", "method": "session/update", "params": params}, dt_us)

    def close(self) -> int:
        size = self.handle.tell()
        self.handle.close()
        return size


def text(rng: random.Random, low: int = 3, high: int = 60) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def history_update(rng: random.Random, sid: str, i: int) -> dict[str, Any]:
    """The i-th replayed update of a session: a cycle of messages, thoughts and tool calls."""
    step = i % 8
    mid = f"{sid}-m{i // 8}"
    if step == 0:
        return {"sessionUpdate": "user_message", "messageId": mid, "content": [_text(rng)]}
    if step in (1, 2):
        return {"sessionUpdate": "agent_thought_chunk", "messageId": mid, "content": _text(rng)}
    if step == 3:
        call = {"path": f"src/module_{i % 97}.py", "pattern": text(rng, 1, 4)}
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": f"call-{sid}-{i}",
            "title": f"Read src/module_{i % 97}.py",
            "kind": "read",
            "status": "pending",
            "rawInput": call,
        }
    if step == 4:
        out = {"type": "content", "content": _text(rng, 20, 120)}
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"call-{sid}-{i - 1}",
            "status": "completed",
            "content": [out],
        }
    return {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": _text(rng)}


def _text(rng: random.Random, low: int = 3, high: int = 60) -> dict[str, str]:
    return {"type": "text", "text": text(rng, low, high)}


def episode(w: Writer, index: int, history: int, prompts: int, resumes: int = 1) -> str:
    """One session: a replaying resume (with the fault rolled for it), then prompt turns;
    `resumes` > 1 resumes it again that many times, each replay the same history (its text
    drawn from the session's own seed) followed by the turns before it: a source to compare
    with (acp-trace fidelity)."""
    outcome = ""
    for again in range(resumes):
        hist = random.Random(f"{index}") if resumes > 1 else w.rng
        outcome = _episode(w, index, history, prompts, hist, again * prompts)
    return outcome


def _episode(
    w: Writer, index: int, history: int, prompts: int, hist: random.Random, turns_before: int
) -> str:
    rng = w.rng
    sid = f"sess_{index:06d}"
    roll = rng.randrange(100)
    fault = next(name for limit, name in FAULTS if roll < limit)
    cursor = {"type": "start"}
    rid = w.request(
        "session/resume", {"sessionId": sid, "cwd": "/home/dev/project", "replayFrom": cursor}
    )
    if fault == "rejected":
        error = {"code": -32602, "message": "unsupported replayFrom cursor"}
        w.send("agent", {"jsonrpc": "2.0", "id": rid, "error": error}, 900)
        return "rejected"
    count = history // 3 if fault == "truncated" else history
    for i in range(count):
        if fault == "live" and i == count // 2:
            w.update(sid, {"sessionUpdate": "usage_update", "used": i, "size": 200000})
        w.update(sid, history_update(hist, sid, i))
    for turn in range(turns_before):  # what the earlier turns said, replayed (resumes > 1)
        w.update(sid, replayed_turn(sid, turn))
    if fault == "truncated":
        error = {"code": -32603, "message": "history store closed", "data": {"sessionId": sid}}
        w.send("agent", {"jsonrpc": "2.0", "id": rid, "error": error}, 900)
        return "truncated"
    if fault != "unmarked":
        w.update(sid, {"sessionUpdate": "replay_complete"})
    w.update(sid, {"sessionUpdate": "state_update", "state": "idle"}, 300)
    w.send("agent", {"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}}, 20000)
    for turn in range(prompts):
        prompt_turn(w, sid, turns_before + turn)
    return "unmarked" if fault == "unmarked" else "complete"


def replayed_turn(sid: str, turn: int) -> dict[str, Any]:
    """A prompt turn's agent message as a later replay carries it (its id, not its text)."""
    return {"sessionUpdate": "agent_message", "messageId": f"{sid}-p{turn}", "content": []}


def prompt_turn(w: Writer, sid: str, turn: int) -> None:
    """A v2 prompt turn: acceptance, chunks, a tool call with a permission request, idle."""
    rng = w.rng
    rid = w.request("session/prompt", {"sessionId": sid, "prompt": [_text(rng, 5, 40)]})
    w.send("agent", {"jsonrpc": "2.0", "id": rid, "result": {}}, 2000)
    w.update(sid, {"sessionUpdate": "state_update", "state": "running"})
    for _ in range(rng.randint(10, 40)):
        w.update(
            sid,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"{sid}-p{turn}",
                "content": _text(rng, 1, 8),
            },
        )
    call = f"call-{sid}-p{turn}"
    w.update(
        sid,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call,
            "title": "Edit file",
            "kind": "edit",
            "status": "pending",
        },
    )
    options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]
    perm = w.request(
        "session/request_permission",
        {"sessionId": sid, "toolCall": {"toolCallId": call}, "options": options},
        src="agent",
    )
    w.send(
        "client",
        {
            "jsonrpc": "2.0",
            "id": perm,
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
        },
        3000,
    )
    w.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"})
    w.update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


CODEX_SID = "0198c0de-0000-7000-8000-0000000c0de5"
CODEX_INFO = {"name": "codex-acp", "title": "Codex", "version": "0.16.0"}
# lines of real source a command's output holds: mostly small, some large
OUTPUT_LINES = (5, 20, 60, 200, 600, 1500, 6000)
HUGE_OUTPUT = 5_000_000  # bytes of one output now and then: past the 4 MB limit, under 16 MiB


def codex_like(out: Path, mb: float, seed: int) -> dict[str, Any]:
    """One v1 `session/load` of codex-acp whose replay is about `mb` megabytes (see the
    module's docstring), answered after its replay, then one prompt turn."""
    from replay_history import Code

    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "codex-like.jsonl"
    w = Writer(path, rng, protocol=1, info=CODEX_INFO)
    params = {"sessionId": CODEX_SID, "cwd": "/home/dev/project", "mcpServers": []}
    rid = w.request("session/load", params)
    w.t_ns += 2_500_000_000  # the agent reads its rollout file before the first update
    budget, code, turn, call = int(mb * 1_000_000), Code(), 0, 0
    while w.handle.tell() < budget:
        turn += 1
        call = codex_turn(w, rng, code, turn, call)
    w.send("agent", {"jsonrpc": "2.0", "id": rid, "result": {"modes": None}}, 3000)
    rid = w.request("session/prompt", {"sessionId": CODEX_SID, "prompt": [_text(rng, 5, 40)]})
    for _ in range(rng.randint(10, 40)):
        chunk = {"sessionUpdate": "agent_message_chunk", "content": _text(rng, 1, 8)}
        w.update(CODEX_SID, chunk)
    w.send("agent", {"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}}, 300)
    for event in ({"event": "eof", "stream": "agent"}, {"event": "exit", "code": 0}):
        w.tap(event)
    size = w.close()
    return {"path": str(path), "files": 1, "bytes": size, "lines": w.lines + 1, "turns": turn}


def codex_turn(w: Writer, rng: random.Random, code: Any, turn: int, call: int) -> int:
    """One replayed turn of a codex session: the prompt, reasoning, commands run and edits
    made with their output, the answer. Returns the last tool call's number."""
    chunk = {"type": "text", "text": text(rng, 10, 120)}
    w.update(CODEX_SID, {"sessionUpdate": "user_message_chunk", "content": chunk})
    for _ in range(rng.randint(1, 6)):
        call += 1
        thought = {"type": "text", "text": text(rng, 20, 200)}
        w.update(CODEX_SID, {"sessionUpdate": "agent_thought_chunk", "content": thought})
        output = _output(rng, code)
        tool = f"call_{call:08d}"
        kind = rng.choice(("execute", "execute", "read", "edit"))
        path = f"src/module_{rng.randrange(97)}.py"
        argv = ["bash", "-lc", f"pytest -q {path}" if kind == "execute" else f"cat {path}"]
        start = {"sessionUpdate": "tool_call", "toolCallId": tool, "kind": kind}
        start.update(title=" ".join(argv[2:]), status="in_progress", rawInput={"command": argv})
        w.update(CODEX_SID, start)
        if kind == "edit":
            new = output.replace(" = ", " := ", 3)
            content = [{"type": "diff", "path": path, "oldText": output, "newText": new}]
        else:
            content = [{"type": "content", "content": {"type": "text", "text": output}}]
        done = {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed"}
        done.update(content=content, rawOutput={"exit_code": 0, "duration_ms": 812})
        w.update(CODEX_SID, done, 40 + len(output) // 20)
    answer = {"type": "text", "text": text(rng, 20, 300)}
    w.update(CODEX_SID, {"sessionUpdate": "agent_message_chunk", "content": answer})
    return call


def _output(rng: random.Random, code: Any) -> str:
    """What a command returned: a run of real source lines, now and then about 5 MB."""
    if rng.randrange(300) == 0:
        parts: list[str] = []
        size = 0
        while size < HUGE_OUTPUT:
            parts.append(code.take(rng, 2000))
            size += len(parts[-1])
        return "".join(parts)
    return str(code.take(rng, rng.choice(OUTPUT_LINES)))


def generate(
    out: Path, mb: float, files: int, history: int, prompts: int, seed: int, resumes: int = 1
) -> dict[str, Any]:
    """Write about `mb` megabytes of episodes into one file or spread over `files` files."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    budget = int(mb * 1_000_000)
    outcomes: Counter[str] = Counter()
    paths: list[str] = []
    total = lines = index = 0
    if files <= 1:
        targets = [out / "trace.jsonl"]
    else:
        folder = out / f"traces-{files}"
        folder.mkdir(exist_ok=True)
        targets = [folder / f"t{i:05d}.jsonl" for i in range(files)]
    per_file = budget / len(targets)
    for path in targets:
        w = Writer(path, rng)
        while w.handle.tell() < per_file:
            outcomes[episode(w, index, history, prompts, resumes)] += 1
            index += 1
        lines += w.lines + 1
        total += w.close()
        paths.append(str(path))
    where = paths[0] if len(paths) == 1 else str(Path(paths[0]).parent)
    return {
        "path": where,
        "files": len(paths),
        "bytes": total,
        "lines": lines,
        "replays": dict(outcomes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=100.0, help="total size in MB (default 100)")
    parser.add_argument(
        "--out", type=Path, required=True, help="directory to write into (outside the repo)"
    )
    parser.add_argument(
        "--files", type=int, default=1, help="spread over this many files (default 1)"
    )
    parser.add_argument("--history", type=int, default=10_000, help="replayed updates per resume")
    parser.add_argument("--prompts", type=int, default=3, help="prompt turns after each resume")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--resumes", type=int, default=1, help="replaying resumes of each session (default 1)"
    )
    parser.add_argument(
        "--codex-like",
        action="store_true",
        help="one codex-acp session/load whose replay is about --mb MB (large tool outputs)",
    )
    args = parser.parse_args(argv)
    if args.codex_like:
        summary = codex_like(args.out, args.mb, args.seed)
    else:
        summary = generate(
            args.out, args.mb, args.files, args.history, args.prompts, args.seed, args.resumes
        )
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
