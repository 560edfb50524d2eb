"""A scripted ACP client for the schema tests of real agents: more of the protocol than the demo
client uses, and one known client fault.

    python schema_client.py --protocol 2 --session SID --cwd DIR -- acp-trace record -o T -- AGENT

It sends, waiting for each answer (or a timeout): initialize, session/new, session/list,
the resume (v2, replayFrom start) or load (v1) of SID, `--bad` session/prompt requests that
carry `content` instead of `prompt` (the schema-invalid request of issue 12), one valid
session/prompt (offline agents fail or stop it), session/cancel, then closes the agent's stdin.
Agent requests are answered: permission with `cancelled`, anything else with -32601. Prints
one JSON line per exchange on stdout, for a person reading a failed test.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

TEXT = {"type": "text", "text": "say hello"}


class Peer:
    """The agent process (behind the tap) and the messages it wrote, as they arrive."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                continue
        self.inbox.put(None)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait for its answer, answering the agent's own requests."""
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = self.inbox.get(timeout=left)
            except queue.Empty:
                break
            if msg is None:
                return {"closed": True}
            if "method" in msg and "id" in msg:
                self._answer(msg)
            elif msg.get("id") == rid and "method" not in msg:
                return msg
        return {"timeout": True}

    def _answer(self, msg: dict[str, Any]) -> None:
        if msg["method"] == "session/request_permission":
            self.send({"id": msg["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        else:
            self.send({"id": msg["id"], "error": {"code": -32601, "message": "not supported"}})

    def close(self, grace: float) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            return self.proc.wait(timeout=grace)


def initialize(protocol: int) -> dict[str, Any]:
    if protocol == 2:
        return {
            "protocolVersion": 2,
            "info": {"name": "acp-trace-schema-client", "version": "1.0"},
            "capabilities": {},
        }
    return {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
        "clientInfo": {"name": "acp-trace-schema-client", "version": "1.0"},
    }


def script(peer: Peer, args: argparse.Namespace) -> None:
    def step(method: str, params: Any, timeout: float = args.timeout) -> Any:
        answer = peer.call(method, params, timeout)
        print(json.dumps({"method": method, "answer": answer})[:2000], flush=True)
        return answer

    step("initialize", initialize(args.protocol))
    new: dict[str, Any] = {"cwd": args.cwd, "mcpServers": []}
    created = step("session/new", new)
    fresh = (created.get("result") or {}).get("sessionId")
    step("session/list", {"cwd": args.cwd})
    if args.protocol == 2:
        resume = {"sessionId": args.session, "cwd": args.cwd, "replayFrom": {"type": "start"}}
        step("session/resume", resume)
    else:
        step("session/load", {"sessionId": args.session, "cwd": args.cwd, "mcpServers": []})
    target = fresh or args.session
    for _ in range(args.bad):
        step("session/prompt", {"sessionId": target, "content": [TEXT]})
    step("session/prompt", {"sessionId": target, "prompt": [TEXT]}, timeout=args.prompt_timeout)
    peer.send({"method": "session/cancel", "params": {"sessionId": target}})
    time.sleep(1.0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--protocol", type=int, default=2)
    parser.add_argument("--session", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--bad", type=int, default=3, help="schema-invalid prompts to send")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--prompt-timeout", type=float, default=20.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    peer = Peer(command)
    try:
        script(peer, args)
    finally:
        code = peer.close(grace=10.0)
    print(json.dumps({"exit": code}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
