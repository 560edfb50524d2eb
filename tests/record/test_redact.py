"""Redaction of secrets in the recorded copy (src/acp_trace/redact.py and the tap's payloads)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_trace.record import redact
from acp_trace.record import writer as trace_writer

SECRET = "hunter2-secret"


def request(method: str, params: Any, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params, **extra}


def servers(**fields: Any) -> dict[str, Any]:
    return {"cwd": "/w", "mcpServers": [{"name": "s", "command": "c", "args": [], **fields}]}


ENV = [{"name": "A", "value": SECRET}, {"name": "B", "value": SECRET}]
HEADERS = [{"name": "Authorization", "value": SECRET}]

CASES = [
    (
        "session/new env",
        request("session/new", servers(env=ENV)),
        ["$.params.mcpServers[0].env[0].value", "$.params.mcpServers[0].env[1].value"],
    ),
    (
        "session/load headers",
        request("session/load", servers(headers=HEADERS)),
        ["$.params.mcpServers[0].headers[0].value"],
    ),
    (
        "session/resume env object",
        request("session/resume", servers(env={"TOKEN": SECRET, "odd key": SECRET})),
        ["$.params.mcpServers[0].env.TOKEN", '$.params.mcpServers[0].env["odd key"]'],
    ),
    (
        "session/fork as a notification",
        {"jsonrpc": "2.0", "method": "session/fork", "params": servers(env=ENV[:1])},
        ["$.params.mcpServers[0].env[0].value"],
    ),
    (
        "authenticate",
        request("authenticate", {"methodId": "api-key", "apiKey": SECRET, "_meta": {"k": SECRET}}),
        ["$.params.apiKey", "$.params._meta"],
    ),
    (
        "auth/login",
        request("auth/login", {"methodId": "token", "credentials": {"token": SECRET}}),
        ["$.params.credentials"],
    ),
]


@pytest.mark.parametrize(("name", "msg", "paths"), CASES, ids=[c[0] for c in CASES])
def test_secrets_are_replaced_and_listed(name: str, msg: dict[str, Any], paths: list[str]) -> None:
    """Each secret of the policy becomes <redacted> and its JSON path is listed."""
    assert redact.redact_message(msg) == paths
    text = json.dumps(msg)
    assert SECRET not in text and redact.REDACTED in text


KEPT = [
    ("other method", request("session/prompt", servers(env=ENV))),
    ("a response", {"jsonrpc": "2.0", "id": 1, "result": servers(env=ENV)}),
    ("no params", {"jsonrpc": "2.0", "id": 1, "method": "authenticate"}),
    ("null value", request("session/new", servers(env=[{"name": "A", "value": None}]))),
    ("not an object", [1, 2]),
]


@pytest.mark.parametrize(("name", "msg"), KEPT, ids=[c[0] for c in KEPT])
def test_everything_else_is_left_alone(name: str, msg: Any) -> None:
    """Other methods, responses and values that are absent are not touched."""
    before = json.dumps(msg)
    assert redact.redact_message(msg) == []
    assert json.dumps(msg) == before


def test_method_id_is_kept() -> None:
    """The auth method id stays readable: it is routing, not a credential."""
    msg = request("authenticate", {"methodId": "api-key", "key": SECRET})
    redact.redact_message(msg)
    assert msg["params"] == {"methodId": "api-key", "key": "<redacted>"}


def test_batches_are_redacted_element_by_element() -> None:
    """In a batch line each element is redacted and its path starts with its index."""
    batch = [request("session/prompt", {}), request("session/new", servers(env=ENV[:1]))]
    line = json.dumps(batch).encode()
    found = redact.redact_line(line)
    assert found is not None
    body, paths = found
    assert paths == ["$[1].params.mcpServers[0].env[0].value"]
    assert json.loads(body)[1]["params"]["mcpServers"][0]["env"][0]["value"] == "<redacted>"


def test_escaped_method_names_are_still_found() -> None:
    """A method name written with JSON escapes (`\\/`, `\\u`) cannot slip past the quick filter."""
    for method in ('"session\\/new"', '"\\u0073ession/new"'):
        line = '{"jsonrpc":"2.0","id":1,"method":' + method
        line += ',"params":' + json.dumps(servers(env=ENV)) + "}"
        found = redact.redact_line(line.encode())
        assert found is not None and SECRET.encode() not in found[0]


def test_lines_without_secrets_are_not_rewritten() -> None:
    """Lines naming no redacted method, and non-JSON lines, come back as None (kept as sent)."""
    assert redact.redact_line(b'{"jsonrpc":"2.0","method":"session/update","params":{}}') is None
    assert redact.redact_line(b"session/new is not JSON") is None
    assert not redact.may_hold_secrets(b'{"method":"session/prompt","text":"a\\nb"}')


def test_recorded_payload_is_valid_json_with_the_paths() -> None:
    """The tap's payload for a redacted line is valid JSON carrying `redacted` and the new `msg`."""
    line = json.dumps(request("session/new", servers(env=ENV)), indent=None).encode() + b"\r"
    payload = trace_writer.line_payload(line, "client", redact=True, max_bytes=None)
    record = json.loads(b"{" + payload + b"}")
    assert record["redacted"][0] == "$.params.mcpServers[0].env[0].value"
    assert record["msg"]["params"]["mcpServers"][0]["env"][1]["value"] == "<redacted>"


def test_a_cut_record_never_shows_a_secret() -> None:
    """With a record limit the redacted text is cut, and `bytes` counts the original line."""
    params = servers(env=ENV)
    params["mcpServers"][0]["args"] = ["x" * 200]
    params["mcpServers"].insert(0, {"name": "first", "command": "c", "args": [], "env": ENV})
    line = json.dumps(request("session/new", params)).encode()
    found = redact.redact_line(line)
    assert found is not None
    limit = len(found[0]) - 5
    payload = trace_writer.line_payload(line, "client", redact=True, max_bytes=limit)
    record = json.loads(b"{" + payload + b"}")
    assert record["text"] == found[0][:limit].decode()
    assert SECRET not in record["text"] and record["text"].count("<redacted>") == 4
    assert record["truncated"] is True and record["bytes"] == len(line)
    assert len(record["redacted"]) == 4


def test_no_redaction_keeps_the_original_bytes() -> None:
    """Without redaction the payload splices the original JSON bytes."""
    line = json.dumps(request("authenticate", {"methodId": "k", "key": SECRET})).encode()
    assert (
        trace_writer.line_payload(line, "client", redact=False, max_bytes=None) == b'"msg":' + line
    )


def test_huge_integers_survive_redaction() -> None:
    """A message with an integer beyond 64 bits is still redacted and re-serialized exactly."""
    line = b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"authenticate",'
    line += b'"params":{"methodId":"k","key":"s"}}'
    found = redact.redact_line(line)
    assert found is not None
    assert b"123456789012345678901234567890" in found[0] and b'"key":"<redacted>"' in found[0]


def test_policy_describes_every_rule() -> None:
    """The header's policy names the methods and paths redacted and the replacement."""
    rules = redact.POLICY["rules"]
    assert {m for r in rules for m in r["methods"]} == set(redact.MCP_METHODS + redact.AUTH_METHODS)
    assert redact.POLICY["replacement"] == "<redacted>"


def test_lone_surrogates_survive_redaction() -> None:
    """A message with a lone surrogate escape is still redacted into valid JSON text."""
    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"\\ud800","k":"s"}}'
    )
    found = redact.redact_line(line)
    assert found is not None
    assert json.loads(found[0])["params"] == {"methodId": "\ud800", "k": "<redacted>"}


def test_only_client_lines_are_redacted() -> None:
    """The redacted methods are client requests, so the agent's lines are recorded as they came."""
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "authenticate",
            "params": {"methodId": "k", "key": "s"},
        }
    ).encode()
    assert b"<redacted>" in trace_writer.line_payload(line, "client", redact=True, max_bytes=None)
    agent = trace_writer.line_payload(line, "agent", redact=True, max_bytes=None)
    assert agent == b'"msg":' + line
