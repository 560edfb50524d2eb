"""JetBrains AIR's end-of-replay event without a real agent: demo-client --air advertises the
capability claude-agent-acp reads, and demo-agent then sends what claude-agent-acp 0.101.0
sends (protocol-notes.md): one `session_info_update` carrying
`_meta.jetbrains.air.loadReplayEnd = true` on the root session after the whole replay of a
load or of a v2 resume from the start, and nothing for a client that did not ask."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import acp_trace
from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.jsonrpc import AIR_CLIENT_META, AIR_EVENT_META, update_class

SID = "sess_demo"
AIR = f"l:{SID}:session_info_update"


def talk(tmp_path: Path, *agent_args: str, **client: Any) -> tuple[list[Any], list[str]]:
    """Run the demo client against the demo agent; the messages received and their tokens
    (as tests/demo/test_agent.py names them: `h:S:kind`, `l:S:kind`, `marker:S`, `ok:ID`)."""
    save = tmp_path / "received.bin"
    opts = ClientOptions(
        command=(sys.executable, "-m", "acp_trace", "demo-agent", *agent_args),
        timeout=30,
        save=save,
        **{"session": SID, **client},
    )
    run_client(opts)
    messages = [json.loads(line) for line in save.read_bytes().splitlines()]
    return messages, [_token(m) for m in messages]


def _token(msg: dict[str, Any]) -> str:
    if "method" not in msg:
        return f"err:{msg['id']}" if "error" in msg else f"ok:{msg['id']}"
    if "id" in msg:
        return f"ask:{msg['method']}"
    sid, update = msg["params"]["sessionId"], msg["params"]["update"]
    kind = update["sessionUpdate"]
    cls = update_class(kind)
    if cls == "marker":
        return f"marker:{sid}"
    if kind == "state_update":
        return f"state:{sid}:{update['state']}"
    return f"{(cls or 'x')[0]}:{sid}:{kind}"


def replay_tokens(tokens: list[str], request_id: int) -> list[str]:
    """The tokens after the previous response, up to and including the response to the id."""
    end = tokens.index(f"ok:{request_id}")
    start = max(
        (i for i, t in enumerate(tokens[:end]) if t.startswith(("ok:", "err:"))), default=-1
    )
    return tokens[start + 1 : end + 1]


def test_v1_load_ends_with_the_event_for_an_air_client(tmp_path: Path) -> None:
    msgs, tokens = talk(tmp_path, "--turns", "2", protocol=1, air=True)
    window = replay_tokens(tokens, 1)
    assert window == [
        *[f"h:{SID}:user_message_chunk", f"h:{SID}:agent_message_chunk"] * 2,
        AIR,
        "ok:1",
    ]
    event = next(m for m in msgs if isinstance(m, dict) and m.get("method") == "session/update"
                 and m["params"]["update"]["sessionUpdate"] == "session_info_update")  # fmt: skip
    assert event["params"]["update"]["_meta"] == AIR_EVENT_META


def test_v2_resume_sends_the_event_after_its_marker(tmp_path: Path) -> None:
    _msgs, tokens = talk(tmp_path, "--turns", "1", "--children", "1", air=True)
    window = replay_tokens(tokens, 1)
    assert window[-4:] == [f"marker:{SID}", AIR, f"state:{SID}:idle", "ok:1"]
    assert window.count(AIR) == 1  # the root session only, never a child


@pytest.mark.parametrize(("protocol", "client"), [(1, {}), (2, {}), (2, {"cursor": "none"})])
def test_no_event_unless_asked_and_replayed(tmp_path: Path, protocol: int, client: dict) -> None:
    """No capability, or a resume without replay: no event."""
    air = bool(client)
    _msgs, tokens = talk(tmp_path, "--turns", "1", protocol=protocol, air=air, **client)
    assert AIR not in tokens


def test_no_event_when_the_replay_stops(tmp_path: Path) -> None:
    _msgs, tokens = talk(tmp_path, "--fault", "truncate:1", air=True)
    assert AIR not in tokens


@pytest.mark.parametrize("protocol", [1, 2])
def test_client_advertises_the_capability(tmp_path: Path, protocol: int) -> None:
    sent = tmp_path / "sent.bin"
    opts = ClientOptions(
        command=(sys.executable, "-m", "acp_trace", "demo-agent"),
        protocol=protocol,
        session=SID,
        timeout=30,
        save_sent=sent,
        air=True,
    )
    assert run_client(opts).finished
    init = json.loads(sent.read_bytes().splitlines()[0])["params"]
    holder = "capabilities" if protocol == 2 else "clientCapabilities"
    assert init[holder]["_meta"] == AIR_CLIENT_META


def test_recorded_demo_gap_comes_from_the_event(tmp_path: Path) -> None:
    """Recorded through the tap, a v2 replay without replay_complete (fault marker-missing)
    is unmarked with its gap measured from the event; a v1 load is marked by it."""
    acp = [sys.executable, "-m", "acp_trace"]
    for protocol, fault in ((2, ("--fault", "marker-missing")), (1, ())):
        trace = tmp_path / f"v{protocol}.jsonl"
        agent = [*acp, "demo-agent", "--turns", "2", "--gap", "0.05", *fault]
        tap = [*acp, "record", "-o", str(trace), "--", *agent]
        client = [*acp, "demo-client", "--air", "--protocol", str(protocol), "--session", SID]
        subprocess.run([*client, "--", *tap], check=True, capture_output=True, timeout=120)
    v2 = acp_trace.replays(tmp_path / "v2.jsonl").row(0, named=True)
    assert (v2["outcome"], v2["gap_source"]) == ("unmarked", "vendor:jetbrains.air.loadReplayEnd")
    assert v2["gap_ms"] >= 50
    v1 = acp_trace.replays(tmp_path / "v1.jsonl").row(0, named=True)
    assert (v1["outcome"], v1["gap_source"]) == ("v1_loaded", "vendor:jetbrains.air.loadReplayEnd")
    assert v1["marker_ms"] == v1["vendor_marker_ms"] and v1["gap_ms"] >= 50
