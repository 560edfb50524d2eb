"""The play itself, on a hand-made recording: ids of its own, the live session id everywhere
after session/new, a cancel naming the new id, --cwd, and the recorded pauses scaled."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from acp_trace.drive import DriveOptions, run_drive
from drivelib import demo_agent
from tracebuilder import TraceBuilder


def _recording(path: Path) -> Path:
    b = TraceBuilder(protocol=2)
    b.request("session/new", {"cwd": "/rec/project", "mcpServers": []}, id="new", dt=5)
    b.response("new", {"sessionId": "sess_rec"}, dt=20)
    prompt = [{"type": "text", "text": "hi"}]
    b.request("session/prompt", {"sessionId": "sess_rec", "prompt": prompt}, id="p", dt=300)
    b.notify("$/cancel_request", {"requestId": "p"}, src="client", dt=40)
    b.response("p", {}, dt=10)
    b.state("sess_rec", dt=10)
    resume = {"sessionId": "sess_rec", "cwd": "/rec/project", "replayFrom": {"type": "start"}}
    b.request("session/resume", resume, id="r", dt=200)
    b.response("r", {}, dt=50)
    return b.write(path)


def test_ids_sessions_and_pauses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests get ids 0, 1, 2...; the session/new answer's id replaces the recorded one;
    the cancel names the prompt's new id; --cwd replaces the recorded cwd; each recorded
    pause (after the event the message followed) is divided by --speed."""
    pauses: list[float] = []
    monkeypatch.setattr("acp_trace.drive.player.pause", pauses.append)
    new = tmp_path / "new.jsonl"
    opts = DriveOptions(
        _recording(tmp_path / "rec.jsonl"),
        tuple(demo_agent("--turns", "2")),
        output=new,
        speed=2,
        cwd="/tmp/elsewhere",
    )
    outcome = run_drive(opts)
    sent = [
        rec["msg"]
        for rec in map(orjson.loads, new.read_bytes().splitlines()[1:])
        if rec.get("src") == "client" and "msg" in rec
    ]
    assert [(m.get("id"), m["method"]) for m in sent] == [
        (0, "initialize"),
        (1, "session/new"),
        (2, "session/prompt"),
        (None, "$/cancel_request"),
        (3, "session/resume"),
    ]
    assert sent[1]["params"]["cwd"] == "/tmp/elsewhere"
    assert sent[2]["params"]["sessionId"] == "sess_new_1"
    assert sent[3]["params"] == {"requestId": 2}
    assert sent[4]["params"]["sessionId"] == "sess_new_1"
    assert sent[4]["params"]["cwd"] == "/tmp/elsewhere"
    assert outcome.play.sessions == {"sess_rec": "sess_new_1"}
    # session/new 5 ms after the initialize answer, the prompt 300 ms after the session/new
    # answer, the cancel 40 ms after the prompt, the resume 200 ms after the turn's end
    assert pauses == pytest.approx([0.0025, 0.15, 0.02, 0.1])
