"""`acp-trace drive` meets hostile text in a recording: a prompt holding a lone surrogate (what
JSON.stringify writes for a cut emoji) and terminal escapes is played as recorded, and what
drive prints holds no raw control character."""

from __future__ import annotations

import json
from pathlib import Path

from acp_trace.jsonrpc import loads
from clirun import Cli
from drivelib import demo_agent

TEXT = "cut \ud83d \x1b[2J\u202e done"


def test_a_recording_with_hostile_text_is_driven_and_reported_escaped(
    cli: Cli, recordings: dict[str, Path], tmp_path: Path
) -> None:
    """The prompt reaches the agent with the recorded value (the escape kept), the run is
    compared as usual, and no raw ESC or bidi control reaches the output."""
    lines = []
    for line in recordings["v2"].read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("msg")
        if isinstance(msg, dict) and msg.get("method") == "session/prompt":
            msg["params"]["prompt"] = [{"type": "text", "text": TEXT}]
        lines.append(json.dumps(rec))
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(lines) + "\n")
    new = tmp_path / "new.jsonl"
    agent = demo_agent("--turns", "5", "--children", "1")
    done = cli("drive", "--speed", "0", "-o", str(new), str(hostile), "--", *agent)
    assert done.code in (0, 1), done.out + done.err
    assert "Traceback" not in done.err
    shown = done.out + done.err
    assert "\x1b" not in shown and "\u202e" not in shown
    sent = [loads(line) for line in new.read_bytes().splitlines()[1:]]
    prompts = [
        r["msg"]["params"]["prompt"][0]["text"]
        for r in sent
        if r.get("src") == "client" and r.get("msg", {}).get("method") == "session/prompt"
    ]
    assert prompts == [TEXT]
