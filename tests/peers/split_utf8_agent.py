"""A minimal ACP agent that writes one update in two reads, cut inside a multi-byte UTF-8
character (the pause lets the proxy read the first part alone), then answers initialize.
make_devtools_captures.py runs it behind acp-devtools to show what a split character becomes
in its capture."""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    """Answer the first initialize after the split update; ignore everything else."""
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") != "initialize":
            continue
        update = {"sessionUpdate": "agent_message_chunk",
                  "content": {"type": "text", "text": "日本語のテキスト"}}  # fmt: skip
        note = {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "s1", "update": update}}  # fmt: skip
        data = (json.dumps(note, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        cut = data.index("日".encode()) + 1  # inside the 3-byte character
        os.write(1, data[:cut])
        time.sleep(0.5)
        os.write(1, data[cut:])
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1}}
        os.write(1, json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        return


if __name__ == "__main__":
    main()
