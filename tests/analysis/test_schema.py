"""Tests of the schema pass and its rules: each message against the ACP JSON Schema, with blame."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.schema import catalog, source, validate_timeline
from tracebuilder import TraceBuilder

SCHEMA_RULES = ["schema-invalid", "caused-error"]
TEXT = {"type": "text", "text": "hello"}
FOUND = re.compile(r"does not match (\w+) of the ACP (?:v\d )?schema at (.+?): ")


def _init(b: TraceBuilder, protocol: int) -> None:
    """A valid initialize exchange of that version."""
    if protocol == 2:
        params = {"protocolVersion": 2, "info": {"name": "client", "version": "1"}}
        result = {"protocolVersion": 2, "info": {"name": "agent", "version": "1"}}
    else:
        params = {"protocolVersion": 1, "clientCapabilities": {}}
        result = {"protocolVersion": 1, "agentCapabilities": {}}
    rid = b.request("initialize", params)
    b.response(rid, result)


def _trace(protocol: int | None = 2) -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    if protocol is not None:
        _init(b, protocol)
    return b


def _prompt(b: TraceBuilder, params: Any, answer: Any = None, code: int | None = None) -> None:
    rid = b.request("session/prompt", params)
    if code is not None:
        b.error(rid, code)
    elif answer is not None:
        b.response(rid, answer)


# ---------------------------------------------------------------- cases: (builder, expected)


def prompt_with_content() -> TraceBuilder:
    b = _trace()
    _prompt(b, {"sessionId": "s", "content": [TEXT]})
    return b


def prompt_valid() -> TraceBuilder:
    b = _trace()
    _prompt(b, {"sessionId": "s", "prompt": [TEXT]}, {"messageId": "m1"})
    return b


def prompt_empty_v2() -> TraceBuilder:
    b = _trace()
    _prompt(b, {"sessionId": "s", "prompt": []})
    return b


def prompt_params_absent() -> TraceBuilder:
    b = _trace()
    b.request("session/prompt")
    return b


def initialize_result_without_info() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    rid = b.request("initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}})
    b.response(rid, {"protocolVersion": 2, "capabilities": {}})
    return b


def initialize_v1_result_without_agent_info() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    rid = b.request("initialize", {"protocolVersion": 1})
    b.response(rid, {"protocolVersion": 1})
    return b


def initialize_v2_request_v1_answer() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    rid = b.request("initialize", {"protocolVersion": 2, "clientInfo": {"name": "c"}})
    b.response(rid, {"protocolVersion": 1})
    return b


def initialize_bad_capabilities() -> TraceBuilder:
    b = TraceBuilder(protocol=None)
    params = {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": 5}
    rid = b.request("initialize", params)
    b.response(rid, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}})
    return b


def unknown_and_extension_methods() -> TraceBuilder:
    b = _trace()
    rid = b.request("foo/bar", {"anything": [1, 2]})
    b.response(rid, "not an object")
    rid = b.request("_vendor/ping", 42, src="agent")
    b.response(rid, None, src="client")
    b.notify("_vendor/event", [1], src="agent")
    return b


def unknown_update_variant_v2() -> TraceBuilder:
    b = _trace()
    b.update("s", "future_thing", anything={"x": 1})
    b.update("s", "_vendor/thing", content=5)
    return b


def unknown_update_variant_v1() -> TraceBuilder:
    b = _trace(1)
    b.update("s", "future_thing", anything={"x": 1})
    return b


def known_update_variant_broken_v1() -> TraceBuilder:
    b = _trace(1)
    b.update("s", "agent_message_chunk")
    return b


def update_without_session() -> TraceBuilder:
    b = _trace()
    b.notify("session/update", {"update": {"sessionUpdate": "future_thing"}})
    return b


def marker_with_meta_only() -> TraceBuilder:
    b = _trace()
    b.update("s", "replay_complete")
    b.update("s", "replay_complete", _meta={"vendor": {"n": 1}})
    b.update("s", "replay_complete", _meta=None)
    return b


def marker_with_bad_meta() -> TraceBuilder:
    b = _trace()
    b.update("s", "replay_complete", _meta=5)
    return b


def tool_call_update_bad_item() -> TraceBuilder:
    b = _trace()
    b.update("s", "tool_call_update", toolCallId="t1", content=[{"type": "content"}])
    return b


def tool_call_update_without_id() -> TraceBuilder:
    b = _trace()
    b.update("s", "tool_call_update", status="completed")
    return b


def no_initialize_invalid_under_both() -> TraceBuilder:
    b = _trace(None)
    _prompt(b, {"sessionId": "s"})
    return b


def no_initialize_valid_under_v1_only() -> TraceBuilder:
    b = _trace(None)
    _prompt(b, {"sessionId": "s", "prompt": [TEXT]}, {"stopReason": "end_turn"})
    b.request("session/load", {"sessionId": "s", "cwd": "/", "mcpServers": []})
    return b


def v1_prompt_result_without_stop_reason() -> TraceBuilder:
    b = _trace(1)
    _prompt(b, {"sessionId": "s", "prompt": [TEXT]}, {"usage": None})
    return b


def v1_prompt_result_unknown_stop_reason() -> TraceBuilder:
    b = _trace(1)
    _prompt(b, {"sessionId": "s", "prompt": [TEXT]}, {"stopReason": "done"})
    return b


def v2_prompt_result_without_message_id() -> TraceBuilder:
    b = _trace()
    _prompt(b, {"sessionId": "s", "prompt": [TEXT]}, {})
    return b


def error_with_string_code() -> TraceBuilder:
    b = _trace()
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": [TEXT]})
    b.send("agent", {"jsonrpc": "2.0", "id": rid, "error": {"code": "E1", "message": "x"}})
    return b


def error_valid() -> TraceBuilder:
    b = _trace()
    rid = b.request("session/prompt", {"sessionId": "s", "prompt": [TEXT]})
    b.error(rid, -32603, data={"anything": [1]})
    return b


def permission_request_without_title() -> TraceBuilder:
    b = _trace()
    options = [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]
    pid = b.request(
        "session/request_permission", {"sessionId": "s", "options": options}, src="agent"
    )
    b.response(pid, {"outcome": {"outcome": "cancelled"}}, src="client")
    return b


def permission_answer_broken() -> TraceBuilder:
    b = _trace()
    params = {
        "sessionId": "s",
        "title": "Edit?",
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}],
    }
    pid = b.request("session/request_permission", params, src="agent")
    b.response(pid, {"outcome": "yes"}, src="client")
    return b


def cancel_request_both_ways() -> TraceBuilder:
    b = _trace()
    b.notify("$/cancel_request", {"requestId": 1}, src="client")
    b.notify("$/cancel_request", {"requestId": "a1"}, src="agent")
    b.notify("session/cancel", {"sessionId": "s"}, src="client")
    return b


def cancel_request_without_id() -> TraceBuilder:
    b = _trace()
    b.notify("$/cancel_request", {}, src="agent")
    return b


def batch_with_one_bad_element() -> TraceBuilder:
    b = _trace()
    good = {"jsonrpc": "2.0", "id": 7, "method": "session/prompt"}
    good["params"] = {"sessionId": "s", "prompt": [TEXT]}
    bad = {"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": "s"}}
    b.send("client", [good, bad])
    return b


Expected = set[tuple[str, str, str, str]]  # (severity, side, type, path)
CASES: list[tuple[Callable[[], TraceBuilder], Expected]] = [
    (prompt_with_content, {("error", "client", "PromptRequest", "params")}),
    (prompt_valid, set()),
    (prompt_empty_v2, {("error", "client", "PromptRequest", "params.prompt")}),
    (prompt_params_absent, {("error", "client", "PromptRequest", "params (absent)")}),
    (initialize_result_without_info, {("error", "agent", "InitializeResponse", "result")}),
    (initialize_v1_result_without_agent_info, set()),
    (initialize_v2_request_v1_answer, {("error", "client", "InitializeRequest", "params")}),
    (
        initialize_bad_capabilities,
        {("warning", "client", "InitializeRequest", "params.capabilities")},
    ),
    (unknown_and_extension_methods, set()),
    (unknown_update_variant_v2, set()),
    (unknown_update_variant_v1, set()),
    (
        known_update_variant_broken_v1,
        {("error", "agent", "SessionNotification", "params.update")},
    ),
    (update_without_session, {("error", "agent", "UpdateSessionNotification", "params")}),
    (marker_with_meta_only, set()),
    (
        marker_with_bad_meta,
        {("warning", "agent", "UpdateSessionNotification", "params.update._meta")},
    ),
    (
        tool_call_update_bad_item,
        {("warning", "agent", "UpdateSessionNotification", "params.update.content[0]")},
    ),
    (
        tool_call_update_without_id,
        {("error", "agent", "UpdateSessionNotification", "params.update")},
    ),
    (no_initialize_invalid_under_both, {("warning", "client", "PromptRequest", "params")}),
    (no_initialize_valid_under_v1_only, set()),
    (v1_prompt_result_without_stop_reason, {("error", "agent", "PromptResponse", "result")}),
    (
        v1_prompt_result_unknown_stop_reason,
        {("error", "agent", "PromptResponse", "result.stopReason")},
    ),
    (v2_prompt_result_without_message_id, {("error", "agent", "PromptResponse", "result")}),
    (error_with_string_code, {("error", "agent", "Error", "error.code")}),
    (error_valid, set()),
    (
        permission_request_without_title,
        {("error", "agent", "RequestPermissionRequest", "params")},
    ),
    (
        permission_answer_broken,
        {("error", "client", "RequestPermissionResponse", "result.outcome")},
    ),
    (cancel_request_both_ways, set()),
    (cancel_request_without_id, {("error", "agent", "CancelRequestNotification", "params")}),
    (batch_with_one_bad_element, {("error", "client", "PromptRequest", "params")}),
]


def _schema_findings(b: TraceBuilder, tmp_path: Path) -> pl.DataFrame:
    return acp_trace.check(b.write(tmp_path / "t.jsonl"), rules=SCHEMA_RULES)


def _seen(found: pl.DataFrame) -> Expected:
    out = set()
    for severity, side, message in found.select("severity", "side", "message").iter_rows():
        match = FOUND.search(message)
        assert match, message
        out.add((severity, side, match.group(1), match.group(2)))
    return out


@pytest.mark.parametrize(("build", "expected"), CASES, ids=[c[0].__name__ for c in CASES])
def test_schema_cases(
    tmp_path: Path, build: Callable[[], TraceBuilder], expected: Expected
) -> None:
    """Each message is judged by the type of its method and direction in its version: invalid
    ones give schema-invalid with the sender, the type and the path; near misses give nothing."""
    found = _schema_findings(build(), tmp_path)
    assert _seen(found.filter(pl.col("rule") == "schema-invalid")) == expected


def test_message_says_what_where_and_the_schemas_words(tmp_path: Path) -> None:
    """A schema-invalid message names the sender, seq, type, path, what is missing, the
    schema's description and the keys the type does not define."""
    (message,) = _schema_findings(prompt_with_content(), tmp_path)["message"].to_list()
    assert message.startswith("the session/prompt request (id 2) sent by the client at seq 3 ")
    assert "PromptRequest of the ACP v2 schema at params: `prompt` is required" in message
    assert 'the schema says: "The blocks of content that compose the user\'s message."' in message
    assert "it has `content`, which PromptRequest does not define" in message


def test_lenient_findings_name_the_marker(tmp_path: Path) -> None:
    """A warning says which schema marker tells receivers to tolerate the value."""
    (message,) = _schema_findings(tool_call_update_bad_item(), tmp_path)["message"].to_list()
    assert "x-deserialize-skip-invalid-items" in message and "so: warning" in message


def test_repeated_problems_are_one_finding_with_a_count(tmp_path: Path) -> None:
    """The same problem in many messages is one finding at the first, counting the others."""
    b = _trace()
    for _ in range(15):
        _prompt(b, {"sessionId": "s", "content": [TEXT]})
    (message,) = _schema_findings(b, tmp_path)["message"].to_list()
    assert "(and 14 more like it: seq 4, 5, 6, 7, 8, ...)" in message


def _caused(code: int, params: dict[str, Any], count: int = 1) -> TraceBuilder:
    b = _trace()
    for _ in range(count):
        _prompt(b, params, code=code)
    return b


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: _caused(-32602, {"sessionId": "s", "content": [TEXT]}), 1),
        (lambda: _caused(-32600, {"sessionId": "s", "content": [TEXT]}), 1),
        (lambda: _caused(-32603, {"sessionId": "s", "content": [TEXT]}), 0),
        (lambda: _caused(-32602, {"sessionId": "s", "prompt": [TEXT]}), 0),
        (lambda: _caused(-32602, {"sessionId": "s", "prompt": [TEXT], "_x": 1}), 0),
    ],
    ids=["invalid-32602", "invalid-32600", "invalid-32603", "valid-32602", "valid-ext-32602"],
)
def test_caused_error_cases(
    tmp_path: Path, build: Callable[[], TraceBuilder], expected: int
) -> None:
    """-32602/-32600 answering a schema-invalid request is caused-error, blamed on its sender;
    another code, or a valid request, is not."""
    found = _schema_findings(build(), tmp_path).filter(pl.col("rule") == "caused-error")
    assert found.height == expected
    if expected:
        assert found.row(0, named=True)["side"] == "client"
        assert found["severity"].to_list() == ["info"]


def test_caused_error_says_who_sent_what(tmp_path: Path) -> None:
    """caused-error names the request, what its sender sent and what the schema requires."""
    b = _caused(-32602, {"sessionId": "s", "content": [TEXT]}, count=15)
    found = _schema_findings(b, tmp_path).filter(pl.col("rule") == "caused-error")
    (message,) = found["message"].to_list()
    assert message.startswith("error -32602 at seq 4 answers the session/prompt request (id 2)")
    assert "the client sent `content`, the schema requires `prompt`" in message
    assert "the error is the client's doing" in message and "and 14 more like it" in message


def test_no_schema_turns_validation_off(tmp_path: Path) -> None:
    """schema=False (check --no-schema) runs no validation: no schema finding at all."""
    path = _caused(-32602, {"sessionId": "s", "content": [TEXT]}).write(tmp_path / "t.jsonl")
    assert acp_trace.check(path, schema=False).filter(pl.col("rule").is_in(SCHEMA_RULES)).is_empty()
    assert set(acp_trace.check(path)["rule"]) >= set(SCHEMA_RULES)


def test_each_shape_is_validated_once(tmp_path: Path) -> None:
    """Messages that differ only in free text are one shape: validated once, counted all."""
    b = _trace()
    for i in range(50):
        b.update(
            "s", "agent_message_chunk", messageId="m", content={"type": "text", "text": f"t {i}"}
        )
    facts = validate_timeline(acp_trace.analyze(b.write(tmp_path / "t.jsonl")).timeline)
    assert facts.checked == 52 and facts.shapes == 3 and not facts.issues


REAL_AGENTS = [
    "claude-agent-acp-v2-resume.jsonl",
    "codex-acp-rs-v1-load.jsonl",
    "codex-acp-ts-v1-load.jsonl",
    "codex-acp-ts-v2-resume.jsonl",
    "gemini-cli-v1-load.jsonl",
]


@pytest.mark.parametrize("name", REAL_AGENTS)
def test_real_agents_correct_traffic_is_valid(name: str) -> None:
    """The recordings of codex-acp 0.16.0 and 2.6.0, claude-agent-acp 0.101.0 and gemini-cli
    0.61.0 (and the demo client's requests) break no schema rule."""
    path = Path(__file__).resolve().parents[2] / "sample_traces" / name
    a = acp_trace.analyze(path)
    facts = validate_timeline(a.timeline)
    assert facts.checked > 400 and not facts.unchecked
    assert a.findings(SCHEMA_RULES).is_empty()


# ---------------------------------------------------------------- the vendored schemas


def test_vendored_files_are_those_of_the_pinned_package() -> None:
    """Every vendored file has the sha256 recorded from npm @agentclientprotocol/sdk@2.4.0."""
    info = source()
    assert (info["package"], info["version"]) == ("@agentclientprotocol/sdk", "2.4.0")
    data = Path(catalog.__file__).parent / "data"
    for name, digest in info["sha256"].items():
        assert hashlib.sha256((data / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (data / "LICENSE").read_text()


@pytest.mark.parametrize("version", catalog.VERSIONS)
def test_unstable_schema_holds_the_stable_one(version: int) -> None:
    """The unstable schema (the one messages are checked against) has every stable type with
    all its properties and variants, and requires nothing more of any of them."""
    stable, unstable = catalog.schema(version, "stable"), catalog.schema(version)
    for name, node in stable.defs.items():
        other = unstable.defs[name]
        assert set(other.get("required", [])) <= set(node.get("required", [])), name
        assert set(node.get("properties", {})) <= set(other.get("properties", {})), name
    assert stable.update_variants <= unstable.update_variants
    assert set(stable.types.items()) <= set(unstable.types.items())


@pytest.mark.parametrize(
    ("version", "kind", "sender", "method", "expected"),
    [
        (2, "request", "client", "session/prompt", "PromptRequest"),
        (2, "response", "agent", "session/prompt", "PromptResponse"),
        (2, "request", "agent", "session/prompt", None),
        (2, "notification", "agent", "session/update", "UpdateSessionNotification"),
        (1, "notification", "agent", "session/update", "SessionNotification"),
        (2, "notification", "client", "session/update", None),
        (2, "request", "agent", "session/request_permission", "RequestPermissionRequest"),
        (2, "response", "client", "session/request_permission", "RequestPermissionResponse"),
        (1, "request", "agent", "fs/read_text_file", "ReadTextFileRequest"),
        (2, "request", "agent", "fs/read_text_file", None),
        (2, "notification", "agent", "$/cancel_request", "CancelRequestNotification"),
        (2, "notification", "client", "$/cancel_request", "CancelRequestNotification"),
        (2, "request", "client", "_vendor/x", None),
        (2, "request", "client", "proxy/initialize", None),
        (2, "error", "agent", None, "Error"),
    ],
)
def test_types_by_method_and_direction(
    version: int, kind: str, sender: str, method: str | None, expected: str | None
) -> None:
    """A message's type comes from its method and the side that handles it (x-method, x-side)."""
    assert catalog.schema(version).type_for(kind, sender, method) == expected


# ---------------------------------------------------------------- shapes


def _shape(texts: list[str]) -> list[str]:
    from acp_trace.analysis.schema.shapes import shape_expr

    return pl.DataFrame({"msg": texts}).select(shape_expr())["msg"].to_list()


TRICKY = [
    r'{"a":"say \":\"b c\"","type":"text","text":"x"}',
    r'{"a\\":"v v","type":"text","text":"y"}',
    r'{"type":"text","text":"ends with backslash \\"}',
    r'{"type":"te\u0078t","text":"escaped literal"}',
    r'{"type":"text","text":["x:","y"],"k":[{"z":"a b"}]}',
    '{"type" : "text" , "text" :\t"spaced out"}',
    '{"type":"text","text":"' + "y" * 500 + '"}',
    '{"type":"textual","text":""}',
    '{"type":"' + "x" * 30 + '","text":"a"}',
]


def _same_validity(text: str, shape: str, validators: list[Any]) -> bool:
    """True when the shape is not JSON (its messages are then validated one by one), or is
    valid under each validator exactly when the message is."""
    try:
        folded = orjson.loads(shape)
    except orjson.JSONDecodeError:
        return True
    value = orjson.loads(text)
    return all(v.is_valid(folded) == v.is_valid(value) for v in validators)


@pytest.mark.parametrize("text", TRICKY)
def test_shapes_keep_validity(text: str) -> None:
    """A shape is valid exactly when the message is (escapes, odd keys, long strings, literals
    written with escapes, strings that cannot be literals)."""
    (shape,) = _shape([text])
    assert _same_validity(text, shape, [catalog.schema(2).validator("ContentBlock")])


def test_a_shape_that_is_not_json_is_validated_message_by_message(tmp_path: Path) -> None:
    """A colon string where a key would end makes the shape no JSON: each message of it is
    still judged by its own text."""
    text = '{"sessionId":"s","prompt":[":", "a b"]}'
    (shape,) = _shape([text])
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(shape)
    b = _trace()
    for _ in range(3):
        _prompt(b, orjson.loads(text))
    found = _schema_findings(b, tmp_path)
    assert _seen(found) == {("error", "client", "PromptRequest", "params.prompt[0]")}
    assert "and 2 more like it" in found["message"][0]


def test_escapes_are_replaced_as_one_pass_after_another_would() -> None:
    """The one pass over the escapes gives what replacing `\\\\` everywhere, then `\\"`, gives
    (runs of backslashes and quotes, near misses of both)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from acp_trace.analysis.schema.shapes import ESCAPES

    @settings(max_examples=500, deadline=None)
    @given(st.lists(st.text(alphabet='\\"u0a:', max_size=12), min_size=1, max_size=8))
    def check(texts: list[str]) -> None:
        column = pl.Series(texts)
        once = column.str.replace_many(list(ESCAPES), list(ESCAPES.values())).to_list()
        stepwise = [t.replace("\\\\", "\\u005c").replace('\\"', "\\u0022") for t in texts]
        assert once == stepwise

    check()


def test_shapes_fold_free_text_but_not_literals() -> None:
    """Free text becomes one placeholder; literals, keys, numbers and empty strings stay."""
    texts = [
        '{"type":"text","text":"Hello, world","n":1,"e":""}',
        '{"type":"text","text":"Bye now","n":1,"e":""}',
        '{"type":"image","text":"Bye now","n":2,"e":""}',
    ]
    shapes = _shape(texts)
    assert shapes[0] == shapes[1] == '{"type":"text","text":"~","n":1,"e":""}'
    assert shapes[2] != shapes[0]


def _values() -> Any:
    from hypothesis import strategies as st

    literals = sorted(catalog.literals())
    words = st.sampled_from(literals) | st.text(max_size=30) | st.sampled_from(['a"b', "c\\", ":"])
    keys = st.sampled_from(["type", "text", "sessionUpdate", "content", "messageId", "uri"]) | words
    leaves = words | st.integers(-3, 3) | st.booleans() | st.none()
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=12,
    )


def test_shapes_keep_validity_of_any_message() -> None:
    """For any JSON value, written plainly or ASCII-escaped, its shape (when it is JSON) is
    valid under a type exactly when the value is."""
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    types = [(2, "ContentBlock"), (2, "UpdateSessionNotification"), (1, "SessionNotification")]

    @settings(max_examples=300, deadline=None)
    @given(value=_values(), ascii_only=st.booleans())
    def check(value: Any, ascii_only: bool) -> None:
        for wrapped in (value, {"sessionId": "s", "update": value}):
            text = json.dumps(wrapped, ensure_ascii=ascii_only)
            (shape,) = _shape([text])
            validators = [catalog.schema(v).validator(name) for v, name in types]
            assert _same_validity(text, shape, validators)

    check()


@pytest.mark.parametrize(
    ("named", "severities"),
    [
        (True, ["warning", "warning"]),  # names no version (True == 1 in Python): both tried
        ("2", ["warning", "warning"]),
        (2.0, []),  # no version either; valid under v1, where JSON Schema's 2.0 is an integer
        # near misses: versions the schema has, checked against that one alone
        (2, ["error"]),
        (1, []),
    ],
)
def test_initialize_names_a_version_only_with_an_integer(
    tmp_path: Path, named: Any, severities: list[str]
) -> None:
    """An initialize whose protocolVersion is a boolean, a string or a float is checked as
    one with no version (against v1 and v2; it crashed, looking for a schema `vTrue`)."""
    b = TraceBuilder(protocol=None)
    b.request("initialize", {"protocolVersion": named, "clientCapabilities": {}})
    found = acp_trace.check(b.write(tmp_path / "t.jsonl"), rules=["schema-invalid"])
    assert found["severity"].to_list() == severities
