"""The remote recorder between the official SDKs (no stand-ins): the TypeScript SDK 2.4.0's
server (experimental/server, experimental/node) and clients (experimental/http-client,
experimental/ws-client), the Python SDK 1.0.0rc3's (acp.http, acp.ws), over Streamable HTTP
and WebSocket, each doing initialize, session/new, a prompt turn and a replaying
session/resume through `acp-trace record --listen` (the Python SDK over h2c too); the traces
analyzed. One run of remote_run.py in a loopback-only network namespace with a private HOME
serves the module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import peerlib
import polars as pl
import pytest

import acp_trace

pytestmark = pytest.mark.peers
HERE = Path(__file__).resolve().parent
WHOLE = ["ts-ts-http", "ts-ts-ws", "py-py-http", "py-py-ws", "py-ts-http", "ts-py-ws"]
WHOLE += ["pyh2-py-h2c"]  # the Python SDK over HTTP/2 without TLS (its app on hypercorn)
DRIVE = ["ts-drive-ws", "py-drive-http"]  # acp-trace drive through acp-trace bridge
BAD = ["ts-bad-ws"]  # session/new before initialize: the TypeScript server closes with 1002
CUT = ["ts-ts-http-cut", "ts-ts-ws-cut", "py-py-ws-cut"]  # the last ends the Python server
STREAM_OF_REPLAY = {"ts": "session", "py": "connection"}  # where each SDK's server sends it


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every scenario recorded once: the traces' folder and what each client got."""
    reason = peerlib.missing_tools()
    if reason is not None:
        if os.environ.get("CI") or os.environ.get("ACP_TRACE_REQUIRE_PEERS"):
            pytest.fail(f"the remote peers must run in CI (or ACP_TRACE_REQUIRE_PEERS): {reason}")
        pytest.skip(f"the remote peers cannot run here: {reason}")
    subprocess.run(["bash", str(HERE / "install_remote.sh")], check=True)
    root = tmp_path_factory.mktemp("remote")
    home = root / "home"
    home.mkdir()
    cache = peerlib.cache_root()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(peerlib.REPO / "src")}
    argv = [sys.executable, str(HERE / "remote_run.py"), str(root), shutil.which("node") or "node"]
    argv += [
        str(cache / "acp-remote" / "node_modules"),
        str(cache / "acp-py" / "venv" / "bin" / "python"),
    ]
    done = subprocess.run(
        [str(peerlib.NETNS_RUN), *argv, *WHOLE, *DRIVE, *BAD, *CUT],
        env=env,
        cwd=root,
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return root, orjson.loads(done.stdout.splitlines()[-1])


def _records(trace: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in trace.read_bytes().splitlines()]


@pytest.mark.parametrize("name", WHOLE)
def test_each_sdk_pair_goes_through_the_proxy(runs: tuple[Path, dict[str, Any]], name: str) -> None:
    """The client got every answer and the whole replay through the proxy; the recorder
    stopped cleanly; the trace holds each message once with its transport and stream."""
    root, results = runs
    result = results[name]
    assert (result["client_exit"], result["recorder_exit"]) == (0, 0), result
    client = result["client"]
    assert [x["method"] for x in client["exchanges"]] == [
        "initialize", "session/new", "session/prompt", "session/resume",
    ]  # fmt: skip
    assert all("result" in x for x in client["exchanges"]), client
    assert client["updates"][-4:] == [
        "user_message",
        "agent_message",
        "replay_complete",
        "state_update",
    ]
    records = _records(root / f"{name}.jsonl")
    messages = [r for r in records if "msg" in r]
    transport = name.split("-")[2]
    assert {r["transport"] for r in messages} == {transport}
    sent = sum(1 for r in messages if r["src"] == "client")
    assert sent == 4  # the four requests, each once (no notification from these clients)
    assert [r.get("event") for r in records[-2:]] == ["exit", "account"]
    assert records[-1]["streams"]["agent"]["recorded"] == records[-1]["streams"]["agent"]["lines"]


@pytest.mark.parametrize("name", WHOLE)
def test_the_replay_is_complete_with_its_gap(runs: tuple[Path, dict[str, Any]], name: str) -> None:
    """The analyzer finds one replaying resume, complete, its gap measured from the marker."""
    root, _results = runs
    table = acp_trace.replays([root / f"{name}.jsonl"])
    assert table.height == 1
    row = table.row(0, named=True)
    assert (row["method"], row["outcome"], row["gap_source"]) == (
        "session/resume",
        "complete",
        "marker",
    )
    assert row["history_updates"] == 2
    assert row["gap_ms"] is not None and row["gap_ms"] >= 0


@pytest.mark.parametrize("name", ["ts-ts-http", "py-py-http", "py-ts-http"])
def test_the_replay_travels_where_each_sdk_sends_it(
    runs: tuple[Path, dict[str, Any]], name: str
) -> None:
    """Over HTTP the TypeScript server sends a resume's replay, marker and response on the
    session stream, the Python one on the connection stream (protocol-notes, Remote ACP); the
    trace says which, with the stream's Acp-Session-Id. The TypeScript client sends that
    header with the resume, the Python one does not (it sends it only for the methods of an
    established session)."""
    root, _results = runs
    records = _records(root / f"{name}.jsonl")
    resume = next(r for r in records if r.get("msg", {}).get("method") == "session/resume")
    answer = next(
        r
        for r in records
        if r.get("msg", {}).get("id") == resume["msg"]["id"] and r["src"] == "agent"
    )
    marker = next(r for r in records if "replay_complete" in json.dumps(r.get("msg")))
    expected = STREAM_OF_REPLAY[name.split("-")[0]]
    assert resume["channel"] == "post"
    assert ("acp_session" in resume) == (name.split("-")[1] == "ts")
    assert answer["channel"] == marker["channel"] == expected
    assert answer["exchange"] == marker["exchange"]
    if expected == "session":
        assert answer["acp_session"] == resume["acp_session"]


@pytest.mark.parametrize("name", CUT)
def test_a_stream_cut_mid_replay_is_recorded_as_such(
    runs: tuple[Path, dict[str, Any]], name: str
) -> None:
    """The server drops the connection after the first replayed update: the client's resume
    fails, the trace has that update, no marker, the stream's `end` is a cut (HTTP) or a
    WebSocket gone without a close frame (1006), and the replay is `truncated`."""
    root, results = runs
    result = results[name]
    assert result["recorder_exit"] == 0
    assert "error" in result["client"]["exchanges"][-1], result["client"]
    records = _records(root / f"{name}.jsonl")
    ends = [r for r in records if r.get("event") == "end" and r["by"] == "agent"]
    if name.split("-")[2] == "ws":
        assert [(e["code"], e["reason"]) for e in ends] == [(1006, "no close frame (closed)")]
    else:
        assert any(e.get("cut") for e in ends), ends
    table = acp_trace.replays([root / f"{name}.jsonl"])
    row = table.filter(pl.col("method") == "session/resume").row(0, named=True)
    assert (row["outcome"], row["history_updates"], row["marker_ms"]) == ("truncated", 1, None)


def test_check_blames_the_cut_and_nothing_else(runs: tuple[Path, dict[str, Any]]) -> None:
    """`check` finds no remote-transport fault in the whole runs (each SDK keeps a replay on
    one stream), and `remote-stream-closed-owing` where the server cut a stream owing the
    resume's answer."""
    root, _results = runs
    for name in WHOLE + CUT:
        found = acp_trace.analyze([root / f"{name}.jsonl"]).findings()
        remote = sorted(r for r in found["rule"].to_list() if r.startswith("remote-"))
        assert remote == (["remote-stream-closed-owing"] if name in CUT else []), name


@pytest.mark.parametrize("name", DRIVE)
def test_drive_plays_a_recording_through_the_bridge(
    runs: tuple[Path, dict[str, Any]], name: str
) -> None:
    """`acp-trace drive REC -- acp-trace bridge URL` plays a recorded client side against each
    SDK's server over each transport: every client message sent, the replay complete in
    drive's own (stdio) trace and in the remote recorder's."""
    root, results = runs
    result = results[name]
    assert result["recorder_exit"] == 0
    assert result["client_exit"] in (0, 1), result["client"]  # 1: ids differ (regressions)
    assert "client messages sent: 4 of 4" in result["client"]["stdout"]
    for trace in (root / f"{name}-drive.jsonl", root / f"{name}.jsonl"):
        table = acp_trace.replays([trace])
        assert table["outcome"].to_list() == ["complete"], trace
    records = _records(root / f"{name}.jsonl")
    assert {r["transport"] for r in records if "msg" in r} == {name.split("-")[2]}


def test_a_first_message_other_than_initialize_is_the_clients_fault(
    runs: tuple[Path, dict[str, Any]],
) -> None:
    """The TypeScript server closes a WebSocket whose first message is no initialize with
    1002 (protocol-notes, Remote ACP): the trace has that close, `check` blames the client."""
    root, results = runs
    assert results["ts-bad-ws"]["recorder_exit"] == 0
    records = _records(root / "ts-bad-ws.jsonl")
    [end] = [r for r in records if r.get("event") == "end"]
    assert (end["by"], end["code"]) == ("agent", 1002)
    found = acp_trace.analyze([root / "ts-bad-ws.jsonl"]).findings()
    blamed = found.filter(pl.col("rule") == "remote-client-error")
    assert blamed["side"].to_list() == ["client"]
