"""A replayed history of real-shaped `session/update` notifications, for bench_tap.py `replay`
(issue 34: the huge resumes of zed #63975 and codex-acp #516).

    replay_history.py OUT --mb 600        # write about 600 MB of history lines to OUT

The shapes follow what claude-agent-acp and codex-acp replay for a long coding session: the
user's prompts and the agent's answers as message chunks, tool calls (read, edit, execute) with
their raw input, and their updates carrying what the tool returned: a run of a real source
file (this Python's standard library, read in name order), or a diff of one. Most lines are a
few KiB; a tool's output reaches 64 KiB. The choices are seeded: the same bytes on every run
with the same Python. Real code is what the recorder's redaction prefilters must get through
fast: JSON escapes (`\\n`, `\\"`), URLs, words such as `token` or `key`, and now and then a
`key=` argument, which the `credential-assignment` rule reads as a credential.
"""

from __future__ import annotations

import argparse
import json
import random
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SESSION = "0198c0de-0000-7000-8000-00000000beef"

PROSE = (
    "the parser reads each frame and keeps the offset of its last complete record so that a "
    "retry starts where the previous attempt stopped while the token bucket refills the auth "
    "layer checks the session key before the handler runs and the cache returns stale entries "
    "when the config says so"
)
WORDS = PROSE.split(" ")
IDENTS = ("frame", "offset", "session", "cache", "config", "handler", "buffer", "result")


def _sources() -> list[Path]:
    """Real source files for the tools' output: the standard library of this Python (its
    files, in name order: the same bytes on every run with the same Python)."""
    return sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))


class Code:
    """Runs of lines from real source files, as a tool that reads or edits them returns."""

    def __init__(self) -> None:
        self._files = _sources()
        self._lines: dict[Path, list[str]] = {}

    def take(self, rng: random.Random, count: int) -> str:
        path = rng.choice(self._files)
        if path not in self._lines:
            self._lines[path] = path.read_text("utf-8", "replace").splitlines()
        lines = self._lines[path] or [""]
        start = rng.randrange(max(1, len(lines) - count))
        return "\n".join(lines[start : start + count]) + "\n"


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _update(update: dict[str, object]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": SESSION, "update": update},
    }
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def history(total: int, seed: int = 34) -> Iterator[bytes]:
    """History lines (newline included) until about `total` bytes were yielded."""
    rng = random.Random(seed)
    code = Code()
    written = turn = call = 0
    while written < total:
        turn += 1
        lines = [
            _update(
                {
                    "sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": _prose(rng, rng.randrange(10, 120))},
                    "messageId": f"user-{turn}",
                }
            )
        ]
        for _ in range(rng.randrange(1, 5)):
            call += 1
            path = f"src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}.py"
            kind = rng.choice(("read", "edit", "execute"))
            raw = {"file_path": path} if kind != "execute" else {"command": f"pytest -q {path}"}
            lines.append(
                _update(
                    {
                        "sessionUpdate": "tool_call",
                        "toolCallId": f"toolu_{call:08d}",
                        "title": f"{kind.capitalize()} {path}",
                        "kind": kind,
                        "status": "pending",
                        "rawInput": raw,
                        "_meta": {"claudeCode": {"toolName": kind.capitalize()}},
                    }
                )
            )
            body = code.take(rng, rng.choice((20, 60, 150, 600)))
            if kind == "edit":
                content = [
                    {
                        "type": "diff",
                        "path": path,
                        "oldText": body,
                        "newText": body.replace(" = ", " := ", 3),
                    }
                ]
            else:
                content = [{"type": "content", "content": {"type": "text", "text": body}}]
            lines.append(
                _update(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": f"toolu_{call:08d}",
                        "status": "completed",
                        "content": content,
                    }
                )
            )
        for _ in range(rng.randrange(1, 8)):
            lines.append(
                _update(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": _prose(rng, rng.randrange(20, 400))},
                        "messageId": f"agent-{turn}",
                    }
                )
            )
        for line in lines:
            written += len(line)
            yield line


def write(path: Path, total: int) -> tuple[int, int]:
    """Write the history to `path`; (lines, bytes)."""
    count = size = 0
    with path.open("wb") as out:
        block: list[bytes] = []
        for line in history(total):
            block.append(line)
            count += 1
            size += len(line)
            if len(block) >= 256:
                out.write(b"".join(block))
                block.clear()
        out.write(b"".join(block))
    return count, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=600.0)
    args = parser.parse_args()
    lines, size = write(args.out, int(args.mb * 1e6))
    print(f"{args.out}: {lines} lines, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
