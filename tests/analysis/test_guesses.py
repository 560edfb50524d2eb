"""Tests of guesses.py: findings that rest on an importer's guess are downgraded and say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import acp_trace
from testpaths import DATA
from tracebuilder import TraceBuilder


def _req(method: str, rid: Any, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


def _update(kind: str, text: str = "x") -> dict[str, Any]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": update},
    }


def _load_with(agent_request: dict[str, Any], answer: Any) -> list[Any]:
    """The issue's capture: a file request of the agent answered while session/load is pending."""
    return [
        _req("initialize", 0, {"protocolVersion": 1}),
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}},
        _req("session/load", 1, {"sessionId": "s1", "cwd": "/w", "mcpServers": []}),
        agent_request,
        {"jsonrpc": "2.0", "id": 1, "result": answer},
        *[_update(k) for k in ("user_message_chunk", "agent_message_chunk") * 2],
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]


def _check(tmp_path: Path, messages: list[Any]) -> pl.DataFrame:
    path = tmp_path / "capture.ndjson"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    return acp_trace.check(path)


READ = _req("fs/read_text_file", 1, {"sessionId": "s1", "path": "/w/a"})
WRITE = _req("fs/write_text_file", 1, {"sessionId": "s1", "path": "/w/a", "content": "y"})


def test_result_shape_keeps_the_load_window_whole(tmp_path: Path) -> None:
    """The file read's `{content}` answer does not close the load: no finding at all."""
    found = _check(tmp_path, _load_with(READ, {"content": "text"}))
    assert found.is_empty()


def test_undecided_guess_gives_a_warning_that_says_so(tmp_path: Path) -> None:
    """`{}` fits both requests: the load-updates-after-response it implies is only a warning."""
    found = _check(tmp_path, _load_with(WRITE, {}))
    row = found.filter(pl.col("rule") == "load-updates-after-response").row(0, named=True)
    assert row["severity"] == "warning"
    assert "rests on a direction the importer guessed at seq 5" in row["message"]
    assert "(an error, made a warning)" in row["message"]
    assert "error" not in found["severity"].to_list()


def _marked_trace(guess_seq_offset: int) -> TraceBuilder:
    """A v2 resume without marker; a guessed notification before it or inside its window."""
    b = TraceBuilder(protocol=2)
    if guess_seq_offset < 0:
        guessed = b.notify("_x/ping", {})
    rid = b.resume("s")
    if guess_seq_offset >= 0:
        guessed = b.notify("_x/ping", {})
    b.history("s", 1)
    b.state("s")
    b.response(rid, {})
    head = orjson.loads(b.lines[0])
    head["ambiguous"] = [{"line": guessed, "seq": guessed, "reason": "unknown method '_x/ping'"}]
    b.lines[0] = orjson.dumps(head)
    return b


@pytest.mark.parametrize(("where", "severity"), [(0, "warning"), (-1, "error")])
def test_window_finding_depends_on_a_guess_inside_its_window(
    tmp_path: Path, where: int, severity: str
) -> None:
    """A guessed record in a replay window downgrades that window's errors; one before it does not."""
    found = acp_trace.check(_marked_trace(where).write(tmp_path / "t.jsonl"))
    row = found.filter(pl.col("rule") == "marker-missing").row(0, named=True)
    assert row["severity"] == severity
    assert ("rests on a direction" in row["message"]) is (severity == "warning")


def test_pairing_finding_depends_on_a_guess_with_its_id(tmp_path: Path) -> None:
    """A cancel whose sender was guessed cannot give an error cancel-unanswered."""
    found = _check(tmp_path, [
        _req("session/prompt", 5, {"sessionId": "s1", "prompt": []}),
        _req("elicitation/create", 5, {"message": "?"}),
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 5}},
    ])  # fmt: skip
    row = found.filter(pl.col("rule") == "cancel-unanswered").row(0, named=True)
    assert row["severity"] == "warning" and "guessed at seq 3" in row["message"]


def test_min_severity_error_hides_downgraded_findings(tmp_path: Path) -> None:
    """A downgraded finding is a warning for --min-severity too."""
    path = tmp_path / "capture.ndjson"
    path.write_text("".join(json.dumps(m) + "\n" for m in _load_with(WRITE, {})))
    assert acp_trace.check(path, min_severity="error").is_empty()


def test_unknown_error_code_is_said_and_the_outcome_stays_truncated() -> None:
    """sacp-conductor <= 10's coded-less error: `truncated`, and an info finding says why."""
    path = DATA / "imports" / "conductor-v10.jsons"
    replays = acp_trace.analyze(path).replays
    assert replays.filter(pl.col("request_id") == "1")["outcome"].to_list() == ["truncated"]
    found = acp_trace.check(path).filter(pl.col("rule") == "import-unknown-error-code")
    assert found["seq"].to_list() == [4, 11] and set(found["severity"]) == {"info"}
    assert "answering session/resume at seq 3" in found["message"][0]
    assert "'Invalid params" in found["message"][0]


def test_full_error_objects_give_rejected() -> None:
    """The Debug-names generation keeps -32602: the same resume is `rejected`, no note."""
    path = DATA / "imports" / "conductor-v11.jsons"
    replays = acp_trace.analyze(path).replays
    assert replays["outcome"].to_list()[0] == "rejected"
    assert acp_trace.check(path).filter(pl.col("rule") == "import-unknown-error-code").is_empty()


def test_untraced_client_response_is_no_warning() -> None:
    """thinkwell does not trace the client's answers: an agent request's silence is only info."""
    found = acp_trace.check(DATA / "imports" / "thinkwell.jsonl")
    row = found.filter(pl.col("rule") == "unanswered-request").row(0, named=True)
    assert row["severity"] == "info" and "does not trace" in row["message"]


def test_a_real_trace_is_left_alone(tmp_path: Path) -> None:
    """Without guesses in the header, findings keep their severity and message."""
    b = _marked_trace(0)
    head = orjson.loads(b.lines[0])
    head.pop("ambiguous")
    b.lines[0] = orjson.dumps(head)
    row = acp_trace.check(b.write(tmp_path / "t.jsonl")).row(0, named=True)
    assert row["severity"] == "error" and "rests on" not in row["message"]
