"""OTLP/JSON out: parsed by the official opentelemetry-proto package, with the right id sizes,
parent links, nanosecond times, replay spans and their marker events."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import acp_trace
from acp_trace.render.otlp import otlp_document
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

pytest.importorskip("opentelemetry.proto")
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

IDS = ("traceId", "spanId", "parentSpanId")


def to_protobuf_json(value: Any) -> Any:
    """OTLP/JSON writes ids as hex (its spec); the protobuf JSON mapping reads bytes as base64."""
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in IDS else to_protobuf_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [to_protobuf_json(v) for v in value]
    return value


def parse(doc: dict[str, Any]) -> ExportTraceServiceRequest:
    return json_format.Parse(json.dumps(to_protobuf_json(doc)), ExportTraceServiceRequest())


def test_the_samples_parse_with_correct_ids_and_parents() -> None:
    """Every span has a 16-byte trace id and an 8-byte span id; every parent exists in its
    trace; one resource per trace, named after the agent."""
    doc, left_out = otlp_document(acp_trace.analyze(SAMPLES))
    assert left_out == []
    request = parse(doc)
    assert len(request.resource_spans) == len(list(SAMPLES.glob("*.jsonl")))
    for rs in request.resource_spans:
        attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
        assert attrs["service.name"]
        spans = [s for ss in rs.scope_spans for s in ss.spans]
        ids = {s.span_id for s in spans}
        assert {len(s.trace_id) for s in spans} == {16} and {len(s.span_id) for s in spans} == {8}
        assert len({s.trace_id for s in spans}) == 1
        assert all(not s.parent_span_id or s.parent_span_id in ids for s in spans)
        assert sum(1 for s in spans if not s.parent_span_id) == 1  # the connection root


def _replay(tmp_path: Path) -> Path:
    b = TraceBuilder(agent="agent-x", version="2.0")
    rid = b.resume("s1", dt=5)
    b.history("s1", 2)
    b.marker("s1", dt=3)
    b.state("s1")
    b.response(rid, dt=450)
    p = b.request("session/prompt", {"sessionId": "s1", "prompt": []})
    b.error(p, -32602)
    return b.write(tmp_path / "t.jsonl")


def test_spans_of_a_replay_and_a_failed_prompt(tmp_path: Path) -> None:
    """The resume request holds a replay span whose marker is an event and whose gap is an
    attribute; the error response gives the request an error status; times are Unix ns from
    the header's started_at plus t_ns."""
    a = acp_trace.analyze(_replay(tmp_path))
    spans = {
        s.name: s
        for rs in parse(otlp_document(a)[0]).resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    }
    assert set(spans) >= {
        "acp connection",
        "session/resume",
        "replay s1",
        "session/prompt",
        "prompt turn",
        "initialize",
    }
    replay, resume = spans["replay s1"], spans["session/resume"]
    assert replay.parent_span_id == resume.span_id
    assert [e.name for e in replay.events] == ["replay_complete", "last history update"]
    attrs = {x.key: x.value for x in replay.attributes}
    assert attrs["acp.replay.gap_ms"].double_value == pytest.approx(451.0)
    assert attrs["acp.replay.outcome"].string_value == "complete"
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp() * 1e9
    assert (
        resume.start_time_unix_nano == int(start) + 7_000_000
    )  # initialize at 1 and 2 ms, then +5
    assert resume.end_time_unix_nano - resume.start_time_unix_nano == 458_000_000
    prompt = spans["session/prompt"]
    assert prompt.status.code == 2 and prompt.parent_span_id == spans["prompt turn"].span_id
    assert {x.key: x.value.int_value for x in prompt.attributes}["rpc.jsonrpc.error_code"] == -32602


def test_untimed_traces_are_left_out(tmp_path: Path) -> None:
    """An ordering-only trace has no time to put on a span: it is named, not exported."""
    b = TraceBuilder()
    b.lines = [line.replace(b'"t_ns":', b'"x":') if i else line for i, line in enumerate(b.lines)]
    path = tmp_path / "untimed.jsonl"
    path.write_bytes(
        b"".join(line.replace(b'"x":', b'"t_ns":null,"y":') + b"\n" for line in b.lines)
    )
    doc, left_out = otlp_document(acp_trace.analyze(path))
    assert doc == {"resourceSpans": []} and left_out == [str(path)]


@pytest.mark.parametrize(
    ("started", "exported"),
    [
        ("1969-12-31T23:59:59Z", False),  # before the epoch: OTLP times are unsigned
        ("0001-01-01T00:00:00+01:00", False),  # a time UTC cannot hold (an OverflowError)
        ("9999-12-31T23:59:59-01:00", False),
        ("9999-12-31T00:00:00Z", False),  # beyond unsigned 64-bit nanoseconds (2554-07-21)
        ("2600-01-01T00:00:00Z", False),
        ("2554-07-21T23:34:34Z", False),
        ("not a time", False),
        # near misses: the epoch itself, and an ordinary start
        ("1970-01-01T00:00:00Z", True),
        ("2026-11-30T10:00:00Z", True),
        ("2554-07-21T23:34:33Z", True),  # the last second OTLP holds (the trace lasts < 0.7 s)
    ],
)
def test_a_start_no_span_can_hold_leaves_the_trace_out(
    tmp_path: Path, started: str, exported: bool
) -> None:
    """A trace whose start is before 1970 or beyond what UTC holds is named as left out."""
    b = TraceBuilder()
    head = json.loads(b.lines[0])
    b.lines[0] = json.dumps({**head, "started_at": started}).encode()
    path = b.write(tmp_path / "t.jsonl")
    doc, left_out = otlp_document(acp_trace.analyze(path))
    assert (len(doc["resourceSpans"]), left_out) == ((1, []) if exported else (0, [str(path)]))
    if exported:
        parse(doc)


@pytest.mark.parametrize(("t_ns", "exported"), [(-5 * 10**18, False), (-(10**9), True)])
def test_a_record_stamped_before_1970_leaves_the_trace_out(
    tmp_path: Path, t_ns: int, exported: bool
) -> None:
    """A record whose time, from the start, falls before 1970 (stamped -5e18 ns): the trace is
    named as left out, never exported with a time OTLP parsers refuse; a second earlier than
    the header's start (near miss) is still 2026."""
    b = TraceBuilder()
    b.raw("stderr", {"text": "early"})
    b.lines[-1] = b.lines[-1].replace(b'"t_ns":%d' % b.t_ns, b'"t_ns":%d' % t_ns)
    path = b.write(tmp_path / "t.jsonl")
    doc, left_out = otlp_document(acp_trace.analyze(path))
    assert (len(doc["resourceSpans"]), left_out) == ((1, []) if exported else (0, [str(path)]))
    if exported:
        parse(doc)


def _surrogates(tmp_path: Path) -> Path:
    """A v1 trace whose agent name, method names, session ids, error messages and stderr hold
    lone surrogates (JSON.stringify's cut emoji), written as the tap writes them."""
    rec = '{"seq":%d,"t_ns":%d,"src":"%s","msg":%s}'
    msgs = [
        ("client", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'),
        (
            "agent",
            '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,'
            '"agentInfo":{"name":"gem\\ud83dini","version":"0.61\\udc00"}}}',
        ),
        (
            "client",
            '{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s\\udc00"}}',
        ),
        (
            "agent",
            '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\\udc00",'
            '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\\ud83d"}}}}',
        ),
        ("agent", '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"cut \\ud83d"}}'),
        (
            "client",
            '{"jsonrpc":"2.0","id":2,"method":"x/\\ud800","params":{"sessionId":"\\udfff"}}',
        ),
        ("agent", '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"\\udbff no"}}'),
    ]
    lines = [
        '{"acp_trace":1,"kind":"header","started_at":"2026-11-30T10:00:00.000000Z",'
        '"command":["gemini"],"cwd":"/","pid":1,"recorder":"acp-trace test"}'
    ]
    lines += [rec % (i, i * 1_000_000, src, msg) for i, (src, msg) in enumerate(msgs, 1)]
    lines.append('{"seq":8,"t_ns":8000000,"src":"stderr","text":"stack \\ud83d"}')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("redact", [True, False])
def test_lone_surrogates_become_u_fffd_and_the_batch_parses(tmp_path: Path, redact: bool) -> None:
    """A lone surrogate in an error message is written as U+FFFD, never as a `\\ud83d` escape
    (issue 44): protobuf's JSON parser takes the whole exported file, and no string in it holds
    a surrogate."""
    from acp_trace.render.export import write_export

    a = acp_trace.analyze(_surrogates(tmp_path))
    (out,) = write_export(a, "otlp", tmp_path / "spans.json", redact_content=redact)
    doc = json.loads(out.read_bytes())

    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in [k, *strings(v)]]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    assert not [s for s in strings(doc) if any(0xD800 <= ord(c) <= 0xDFFF for c in s)]
    request = parse(doc)
    spans = {s.name: s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans}
    load = spans["session/load"]
    attrs = {x.key: x.value.string_value for x in load.attributes}
    assert attrs["rpc.jsonrpc.error_message"] == "cut \ufffd"
    assert load.status.message == "cut \ufffd"
    assert attrs["acp.session.id"] == "s\\udc00"  # as the reader holds it: as replays shows it
    other = next(s for name, s in spans.items() if name.startswith("x/"))
    assert other.status.message == "\ufffd no"
