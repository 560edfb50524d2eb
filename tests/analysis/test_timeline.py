"""Tests of the timeline: pairing, session attribution, update classes, connection facts."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acp_trace
from acp_trace.analysis.summary import summarize
from acp_trace.analysis.timeline import _pairs
from acp_trace.jsonrpc import agent_name_from_command
from tracebuilder import TraceBuilder


def _tl(b: TraceBuilder, tmp_path: Path) -> pl.DataFrame:
    return acp_trace.timeline(b.write(tmp_path / "t.jsonl"))


def _row(tl: pl.DataFrame, seq: int) -> dict:
    return tl.filter(pl.col("seq") == seq).row(0, named=True)


def test_crossed_ids_pair_by_direction(tmp_path: Path) -> None:
    """A client request and an agent request with the same id each pair with the other side's answer."""
    b = TraceBuilder()
    b.request("session/prompt", {"sessionId": "s"}, id=7)
    b.request("session/request_permission", {"sessionId": "s"}, id=7, src="agent")
    client_answer = b.response(7, {"outcome": "allowed"}, src="client")
    agent_answer = b.response(7, {"stopReason": "end_turn"})
    tl = _tl(b, tmp_path)
    assert _row(tl, client_answer)["request_method"] == "session/request_permission"
    assert _row(tl, agent_answer)["request_method"] == "session/prompt"


@pytest.mark.parametrize(
    ("request_id", "answer_id", "paired"),
    [
        (1, 1, True),
        ("abc", "abc", True),
        ("1", 1, False),
        (1, "1", False),
        (0, 0, True),
    ],
)
def test_ids_keep_their_type(
    tmp_path: Path, request_id: object, answer_id: object, paired: bool
) -> None:
    """Ids pair only when equal in value and type: `1` and `"1"` are different ids."""
    b = TraceBuilder()
    b.request("session/new", {"cwd": "/"}, id=request_id)
    seq = b.response(answer_id, {"sessionId": "s"})
    row = _row(_tl(b, tmp_path), seq)
    assert (row["request_method"] == "session/new") is paired
    assert row["orphan"] is (not paired)


def test_client_response_does_not_answer_client_request(tmp_path: Path) -> None:
    """A response sent by the client with the id of a client request is not that request's answer."""
    b = TraceBuilder()
    rid = b.resume("s")
    wrong = b.response(rid, {}, src="client")
    right = b.response(rid, {})
    tl = _tl(b, tmp_path)
    assert _row(tl, wrong)["orphan"] is True
    assert _row(tl, right)["request_method"] == "session/resume"


def test_duplicate_ids_pair_in_order(tmp_path: Path) -> None:
    """Two pending requests with one id are flagged and answered first-in first-out."""
    b = TraceBuilder()
    first = b.request("a/one", id=5)
    second = b.request("a/two", id=5)
    answer = b.response(5, {})
    tl = _tl(b, tmp_path)
    assert _row(tl, 3)["duplicate_id"] is False and _row(tl, 4)["duplicate_id"] is True
    assert first == second == 5
    assert _row(tl, answer)["request_method"] == "a/one"
    assert _row(tl, 4)["peer_row"] is None


def test_null_id_error_is_not_orphan(tmp_path: Path) -> None:
    """An error with id null (the answer to unparseable input) is not an orphan response."""
    b = TraceBuilder()
    seq = b.send("agent", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}})
    assert _row(_tl(b, tmp_path), seq)["orphan"] is False


@pytest.mark.parametrize(
    ("message", "session"),
    [
        ({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "p"}}, "p"),
        ({"jsonrpc": "2.0", "id": 9, "result": {"sessionId": "r"}}, "r"),
        (
            {
                "jsonrpc": "2.0",
                "id": 9,
                "error": {"code": -32002, "message": "x", "data": {"sessionId": "e"}},
            },
            "e",
        ),
        ({"jsonrpc": "2.0", "id": 9, "result": {}}, None),
    ],
)
def test_session_attribution(tmp_path: Path, message: dict, session: str | None) -> None:
    """Sessions come from params.sessionId, result.sessionId and error.data.sessionId."""
    b = TraceBuilder()
    seq = b.send("agent", message)
    assert _row(_tl(b, tmp_path), seq)["session"] == session


def test_response_inherits_request_session(tmp_path: Path) -> None:
    """A response without a sessionId belongs to the session of the request it answers."""
    b = TraceBuilder()
    rid = b.resume("s9")
    seq = b.response(rid, {})
    assert _row(_tl(b, tmp_path), seq)["session"] == "s9"


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("user_message_chunk", "history"),
        ("tool_call_update", "history"),
        ("subagent_update", "history"),
        ("state_update", "live"),
        ("usage_update", "live"),
        ("replay_complete", "marker"),
        ("brand_new_kind", "unknown"),
    ],
)
def test_update_classes(tmp_path: Path, kind: str, cls: str) -> None:
    """Each session/update kind is history, live, marker or unknown (never flagged)."""
    b = TraceBuilder()
    seq = b.update("s", kind)
    assert _row(_tl(b, tmp_path), seq)["update_class"] == cls


@pytest.mark.parametrize("protocol", [1, 2])
def test_protocol_and_agent_from_initialize(tmp_path: Path, protocol: int) -> None:
    """The initialize response decides the protocol; v1 agentInfo and v2 info name the agent."""
    b = TraceBuilder(protocol=protocol, agent="codex-acp", version="2.6.0")
    tl = _tl(b, tmp_path)
    assert set(tl["protocol"].to_list()) == {protocol}
    assert set(tl["agent"].to_list()) == {"codex-acp"}
    assert set(tl["agent_version"].to_list()) == {"2.6.0"}


def test_agent_name_falls_back_to_command(tmp_path: Path) -> None:
    """Without an initialize exchange the agent is named after the recorded command."""
    b = TraceBuilder(protocol=None)
    b.update("s", "agent_message_chunk")
    assert _tl(b, tmp_path)["agent"][0] == "test-agent"


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["node", "/x/node_modules/@agentclientprotocol/codex-acp/dist/index.js"], "index"),
        (["/usr/bin/codex-acp", "--flag"], "codex-acp"),
        (["python3", "-m", "agent"], "agent"),
        (["env", "A=1", "gemini", "--experimental-acp"], "gemini"),
    ],
)
def test_agent_name_from_command(argv: list[str], name: str) -> None:
    """The agent's short name skips interpreters, flags and environment assignments."""
    assert agent_name_from_command(argv) == name


def test_summary_counts_and_problems(tmp_path: Path) -> None:
    """The summary counts methods, update kinds, stderr, malformed lines and lost records."""
    b = TraceBuilder()
    b.update("s", "agent_message_chunk")
    b.text("stderr", "log line")
    b.seq += 2  # two lost records
    b.update("s", "agent_message_chunk")
    b.lines.append(b"{not json")
    b.event("exit", code=0, signal=None)
    path = b.write(tmp_path / "t.jsonl")
    row = summarize(acp_trace.read_trace(path)).row(0, named=True)
    assert row["agent"] == "test-agent" and row["protocol"] == 2
    assert row["stderr_lines"] == 1 and row["malformed"] == 1 and row["malformed_lines"] == [7]
    assert row["lost_records"] == 2 and row["exit_code"] == 0 and row["exit_signal"] is None
    assert {"name": "agent_message_chunk", "count": 2} in row["by_update_kind"]


def test_summary_names_the_signal_that_ended_the_agent(tmp_path: Path) -> None:
    """An agent killed by a signal shows the signal in the summary."""
    b = TraceBuilder()
    b.event("exit", code=None, signal=15)
    row = summarize(acp_trace.read_trace(b.write(tmp_path / "t.jsonl"))).row(0, named=True)
    assert (row["exit_code"], row["exit_signal"]) == (None, 15)


def test_summary_says_when_the_header_is_missing(tmp_path: Path) -> None:
    """A trace written without a header line is read, and the summary says the header is missing."""
    b = TraceBuilder()
    b.lines = b.lines[1:]
    row = summarize(acp_trace.read_trace(b.write(tmp_path / "t.jsonl"))).row(0, named=True)
    assert row["header"] is False and row["protocol"] == 2 and row["agent"] == "test-agent"


def _reference_pairs(rows: list[tuple[str, str, str, float | None]]) -> list[tuple]:
    """The pairing rule written as plainly as it reads: a queue per (requesting side, id), a
    response takes the oldest request waiting. Rows are (src, kind, id, t_ms)."""
    pending: dict[tuple[str, str], list[int]] = {}
    out = {i: [None, None, False, False] for i in range(len(rows))}  # peer, latency, orphan, dup
    for i, (src, kind, mid, t) in enumerate(rows):
        if kind == "request":
            queue = pending.setdefault((src, mid), [])
            out[i][3] = bool(queue)
            queue.append(i)
            continue
        queue = pending.get(("agent" if src == "client" else "client", mid), [])
        if not queue:
            out[i][2] = mid != "null" or kind != "error"
            continue
        j = queue.pop(0)
        latency = None if t is None or rows[j][3] is None else t - rows[j][3]
        out[i][:2] = [j, latency]
        out[j][:2] = [i, latency]
    return [tuple(out[i]) for i in range(len(rows))]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["client", "agent", "stderr"]),
            st.sampled_from(["request", "request", "response", "error"]),
            st.sampled_from(["1", "2", '"1"', "null"]),
            st.one_of(st.none(), st.floats(0, 1e6)),
        ),
        max_size=40,
    )
)
def test_pairing_is_a_queue_per_side_and_id(rows: list[tuple[str, str, str, float | None]]) -> None:
    """Paired in polars, every row gets the peer, latency, orphan and duplicate flags that a
    plain queue per (requesting side, id) gives."""
    t_ns = [None if t is None else int(t * 1e6) for *_, t in rows]
    records = pl.DataFrame(
        {
            "trace": ["t"] * len(rows),
            "src": [r[0] for r in rows],
            "kind": [r[1] for r in rows],
            "id": [r[2] for r in rows],
            "method": ["m" if r[1] == "request" else None for r in rows],
            "t_ns": t_ns,
        },
        schema={
            "trace": pl.String,
            "src": pl.String,
            "kind": pl.String,
            "id": pl.String,
            "method": pl.String,
            "t_ns": pl.Int64,
        },
    )
    df = records.with_row_index("row").with_columns((pl.col("t_ns") / 1e6).alias("t_ms"))
    got = _pairs(df).sort("row")
    times = df["t_ms"].to_list()  # the reference subtracts the same floats
    expected = _reference_pairs([(s, k, i, t) for (s, k, i, _), t in zip(rows, times, strict=True)])
    assert got.select("peer_row", "latency_ms", "orphan", "duplicate_id").rows() == [
        (peer, latency, orphan, dup) for peer, latency, orphan, dup in expected
    ]
