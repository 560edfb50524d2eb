"""Other tools' captures, made by the real tools, read by the importers (issue 13).

@thinkwell/conductor 0.5.7 runs between demo-client and `acp-trace demo-agent`, acpx 0.19.1
drives demo-agent (behind tee_agent.py), both in the loopback-only netns with a private HOME;
what they write is imported and compared with what the client and the agent really exchanged.
The shipped result-shape table is regenerated from the pinned SDK and compared too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import peerlib
import polars as pl
import pytest

import acp_trace
from acp_trace.trace import importers
from acp_trace.trace.importers import make_result_shapes

pytestmark = pytest.mark.peers
SID = "sess-import-1"


@pytest.fixture(scope="module")
def tools_ready(peers_ready: None) -> None:
    """acpx, Node 22, the SDK and the thinkwell conductor are installed (pinned)."""
    peerlib.install(peerlib.TOOLS)


def _messages(path: Path) -> list[Any]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _imported(path: Path) -> list[dict[str, Any]]:
    ((_, lines),) = importers.convert(path, path.read_bytes())
    return [orjson.loads(line) for line in lines]


def test_thinkwell_trace_gives_what_the_client_sent_and_received(
    tools_ready: None, tmp_path: Path
) -> None:
    """Imported: the client's requests as sent, the agent's messages as received, answers paired."""
    trace = tmp_path / "thinkwell.jsonl"
    run = peerlib.run_thinkwell(
        tmp_path, trace, sid=SID, protocol=2, cwd=str(tmp_path), faults=("request-before-marker",)
    )
    assert run.client_exit == 0, run.client_output
    records = _imported(trace)
    head, body = records[0], [r["msg"] for r in records[1:]]
    assert head["unconverted"] == 0 and head["unmatched_responses"] == 0
    sent, received = _messages(run.client_sent), _messages(run.client_received)
    client_requests = [m for m in sent if "method" in m]
    assert [m for m, r in zip(body, records[1:], strict=True) if r["src"] == "client"] == (
        client_requests
    )
    # the client saw the agent's request under the conductor's id; the trace has the agent's
    answered = [m for m in received if "method" not in m]
    assert [m for m in body if "method" not in m] == answered
    notes = [m for m in received if "method" in m and "id" not in m]
    assert [m for m in body if "method" in m and "id" not in m and m in notes] == notes
    found = acp_trace.check(trace)
    assert "error" not in found["severity"].to_list()


def test_acpx_output_is_the_wire_in_order(tools_ready: None, tmp_path: Path) -> None:
    """acpx --format json lists every message of both directions, each in its own order."""
    code, out, err = peerlib.run_acpx(
        tmp_path, sid=SID, cwd=str(tmp_path), commands=[["exec", "hello from acpx"]]
    )
    assert code == 0, err
    capture = tmp_path / "acpx.jsonl"
    capture.write_bytes(out)
    records = _imported(capture)
    head = records[0]
    assert head["imported_from"] == "acpx" and head["ambiguous"] == [] and head["unconverted"] == 0
    files = tmp_path / "capture"
    for src, wire in (("client", "agent-read.bin"), ("agent", "agent-wrote.bin")):
        mine = [r["msg"] for r in records[1:] if r["src"] == src]
        assert mine == _messages(files / wire)
    table = acp_trace.read_trace(capture)
    assert table.filter(pl.col("kind") == "request")["method"].to_list() == [
        "initialize",
        "session/new",
        "session/prompt",
    ]


def test_result_shapes_are_generated_from_the_pinned_sdk(tools_ready: None) -> None:
    """result_shapes.json is exactly what make_result_shapes.py writes from the SDK's schemas."""
    assert make_result_shapes.render(peerlib.sdk_dir()) == make_result_shapes.OUT.read_text()
