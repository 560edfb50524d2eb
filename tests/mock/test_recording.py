"""Reading a recording into connections and cues: what belongs to which request, what is left out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from acp_trace.errors import InputError
from acp_trace.mock.recording import load_connections
from testpaths import DATA, SAMPLES
from tracebuilder import TraceBuilder


def one(path: Path):  # type: ignore[no-untyped-def]
    conns = load_connections([path])
    assert len(conns) == 1
    return conns[0]


def test_each_request_gets_the_lines_until_the_next_request(tmp_path: Path) -> None:
    """Updates, stderr and raw lines go to the latest request; its response is its reply."""
    t = TraceBuilder()
    rid = t.resume("s1")
    t.update("s1", "user_message", messageId="m1")
    t.text("stderr", "loading")
    t.text("agent", "not json")
    t.marker("s1")
    t.response(rid)
    t.update("s1", "usage_update")
    conn = one(t.write(tmp_path / "t.jsonl"))
    init, resume = conn.cues
    assert init.method == "initialize" and init.reply is not None
    assert [(line.kind, line.seq) for line in resume.lines] == [
        ("msg", 4),
        ("stderr", 5),
        ("raw", 6),
        ("msg", 7),
        ("msg", 8),
        ("msg", 9),
    ]
    assert resume.reply is resume.lines[4]
    assert resume.session == "s1" and conn.protocol == 2 and conn.sessions == ["s1"]


def test_a_late_response_stays_with_its_own_request(tmp_path: Path) -> None:
    """A response that comes after the client's next request belongs to its own request."""
    t = TraceBuilder()
    first = t.resume("s1")
    t.update("s1", "user_message")
    second = t.request("session/set_mode", {"sessionId": "s1", "modeId": "x"})
    t.update("s1", "agent_message")
    t.response(first)
    t.response(second)
    conn = one(t.write(tmp_path / "t.jsonl"))
    resume, mode = conn.cues[1:]
    assert [line.seq for line in resume.lines] == [4, 7]
    assert resume.reply is not None and resume.reply.seq == 7
    assert [line.seq for line in mode.lines] == [6, 8]


def test_agent_requests_know_where_the_client_answered(tmp_path: Path) -> None:
    """An agent request records the seq and time of the client's answer; an unanswered one none."""
    t = TraceBuilder()
    rid = t.request("session/prompt", {"sessionId": "s1", "prompt": []})
    ask = t.request("session/request_permission", {"sessionId": "s1"}, src="agent")
    answered = t.response(ask, {"outcome": {"outcome": "selected"}}, src="client")
    answered_at = t.t_ns
    t.request("fs/read_text_file", {"sessionId": "s1"}, src="agent")
    t.response(rid, {"stopReason": "end_turn"})
    conn = one(t.write(tmp_path / "t.jsonl"))
    lines = conn.cues[1].lines
    assert lines[0].answer == (answered, answered_at)
    assert lines[1].answer is None


@pytest.mark.parametrize(
    ("events", "end"),
    [
        ([("eof", {"stream": "agent"}), ("exit", {"code": 3, "signal": None})], 3),
        ([("exit", {"code": None, "signal": 9})], -9),
        (
            [("eof", {"stream": "client"}), ("eof", {"stream": "agent"}), ("exit", {"code": 0})],
            None,
        ),
        ([], None),
    ],
)
def test_the_agent_ending_before_the_client_closed_is_kept(
    tmp_path: Path, events: list[tuple[str, dict[str, object]]], end: int | None
) -> None:
    """An agent that went away by itself ends its cue with its exit code (minus a signal);
    ending after the client closed stdin, or a trace that just stops, adds nothing."""
    t = TraceBuilder()
    t.resume("s1")
    t.update("s1", "user_message")
    for name, fields in events:
        t.event(name, **fields)
    t.text("stderr", "after the end")
    lines = one(t.write(tmp_path / "t.jsonl")).cues[1].lines
    ends = [line.code for line in lines if line.kind == "end"]
    assert ends == ([] if end is None else [end])
    assert ("stderr" in [line.kind for line in lines]) == (end is None)


def test_batches_damaged_and_cut_lines(tmp_path: Path) -> None:
    """A batch gives its elements as written; damaged and cut lines are counted, not read."""
    t = TraceBuilder()
    t.resume("s1")
    notes = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "n": i}}
        for i in range(2)
    ]
    t.send("agent", notes)
    t.raw("agent", {"text": '{"jsonrpc":"2.0","meth', "truncated": True, "bytes": 900})
    t.lines.append(b"{not json")
    path = t.write(tmp_path / "t.jsonl")
    conn = one(path)
    batch = conn.cues[1].lines
    assert [orjson.loads(line.data)["params"]["n"] for line in batch] == [0, 1]
    assert batch[0].seq == batch[1].seq
    assert dict(conn.left_out) == {"damaged lines": 1, "lines recorded cut (--max-record-bytes)": 1}


def test_concatenated_traces_are_connections_of_their_own(tmp_path: Path) -> None:
    """`cat a.jsonl b.jsonl`: two connections named FILE#1 and FILE#2, with their versions."""
    a, b = TraceBuilder(protocol=1), TraceBuilder(protocol=2)
    path = tmp_path / "both.jsonl"
    path.write_bytes(a.write(tmp_path / "a").read_bytes() + b.write(tmp_path / "b").read_bytes())
    conns = load_connections([path])
    assert [(c.name, c.protocol) for c in conns] == [(f"{path}#1", 1), (f"{path}#2", 2)]


def test_other_formats_are_read_through_the_library(tmp_path: Path) -> None:
    """A capture of another tool (ACP Inspector's export) gives its connections too."""
    conns = load_connections([DATA / "imports" / "inspector.jsonl"])
    assert conns and all(c.initialize is not None for c in conns)
    assert any(c.has_agent_side() for c in conns)


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    """A path that cannot be read raises InputError naming it."""
    with pytest.raises(InputError, match=r"nothing\.jsonl: cannot be read"):
        load_connections([tmp_path / "nothing.jsonl"])


def test_reading_a_v1_trace_loads_no_analyzer_library() -> None:
    """Importing the mock and reading a v1 trace loads neither polars nor matplotlib."""
    code = (
        "import sys; from acp_trace.mock import MockOptions, prepare; "
        f"prepare(MockOptions(({str(SAMPLES / 'demo-v2-children.jsonl')!r},))); "
        "print(sorted({'polars', 'matplotlib', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
