"""The policy's rules on a message (redaction/rules.py): a `{name, value}` pair's `_meta` (an
HttpHeader of an HTTP MCP server, an EnvVariable) is redacted as the pair's value, whatever
its shape (issue 44)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_trace.redaction.redactor import RedactionPolicy, Redactor

S = "hunter2-secret"  # a secret no pattern knows
N = 31337  # a secret number

SHAPES: list[tuple[str, Any]] = [
    ("a string", S),
    ("a number", N),
    ("a float", 3.25),
    ("a boolean", True),
    ("an object", {"raw": S}),
    ("an object of numbers", {"pin": N, "ratio": 0.5, "on": False}),
    ("an array", [S, N]),
    ("nested objects and arrays", {"a": [{"b": {"c": [S, [N, {"d": S}]]}}], "e": None}),
    ("an object with odd keys", {"odd key": S, "": N, "x.y": [S]}),
    ("deeply nested", json.loads('{"k":' * 60 + json.dumps(S) + "}" * 60)),
    ("a secret spelled like a placeholder's neighbour", {"v": "<redacted>x" + S}),
]


def http_header(meta: Any) -> dict[str, Any]:
    header = {"name": "X-Api", "value": "v", "_meta": meta}
    server = {"type": "http", "name": "h", "url": "https://h/mcp", "headers": [header]}
    return {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [server]}}  # fmt: skip


def env_variable(meta: Any) -> dict[str, Any]:
    server = {"name": "s", "command": "/bin/s", "args": [], "env": [{"name": "T", "value": "v", "_meta": meta}]}  # fmt: skip
    return {"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {"cwd": "/w", "mcpServers": [server]}}  # fmt: skip


def terminal_env(meta: Any) -> dict[str, Any]:
    params = {
        "sessionId": "s",
        "command": "ls",
        "env": [{"name": "T", "value": "v", "_meta": meta}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "terminal/create", "params": params}


def auth_env(meta: Any) -> dict[str, Any]:
    method = {"id": "t", "name": "T", "type": "terminal", "env": [{"name": "T", "value": "v", "_meta": meta}]}  # fmt: skip
    return {"jsonrpc": "2.0", "id": 1, "result": {"authMethods": [method]}}


# where the pair sits: the message, its sender, the path of the pair's `_meta`
PLACES = [
    (http_header, "client", "$.params.mcpServers[0].headers[0]._meta"),
    (env_variable, "client", "$.params.mcpServers[0].env[0]._meta"),
    (terminal_env, "agent", "$.params.env[0]._meta"),
    (auth_env, "agent", "$.result.authMethods[0].env[0]._meta"),
]


def leaves(value: Any) -> Iterator[Any]:
    """Every value under `value` that is neither an object nor an array (iteratively)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        else:
            yield node


def pair_meta(msg: dict[str, Any], path: str) -> Any:
    """The value at a `$.a.b[0].c` path."""
    node: Any = msg
    for part in path.removeprefix("$.").replace("]", "").replace("[", ".").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return node


def recorded(msg: dict[str, Any], src: str) -> tuple[dict[str, Any], bytes]:
    line = json.dumps(msg, separators=(",", ":")).encode()
    payload = Redactor(RedactionPolicy()).line_payload(line, src)
    return json.loads(b"{" + payload + b"}"), payload


@pytest.mark.parametrize(("place", "src", "path"), PLACES, ids=[p[0].__name__ for p in PLACES])
@pytest.mark.parametrize(("shape", "meta"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_pairs_meta_of_any_shape_is_redacted(
    place: Any, src: str, path: str, shape: str, meta: Any
) -> None:
    """Every value under a header's (or variable's) `_meta` that is not null becomes
    `<redacted>`, keys and nesting kept; a scalar `_meta` is replaced whole; its paths are
    listed; the value itself is replaced as before."""
    rec, payload = recorded(place(meta), src)
    assert S.encode() not in payload and str(N).encode() not in payload, shape
    got = pair_meta(rec["msg"], path)
    assert all(leaf in (None, "<redacted>") for leaf in leaves(got)), got
    assert pair_meta(rec["msg"], path.removesuffix("_meta") + "value") == "<redacted>"
    assert any(p.startswith(path) for p in rec["redacted"]), rec["redacted"]


@pytest.mark.parametrize("meta", [None, {}, [], {"a": None}, [None, []]])
def test_a_pairs_meta_with_nothing_in_it_stays(meta: Any) -> None:
    """A null `_meta`, or one with no value but null, is recorded as it was."""
    rec, _payload = recorded(http_header(meta), "client")
    path = "$.params.mcpServers[0].headers[0]._meta"
    assert pair_meta(rec["msg"], path) == meta
    assert not [p for p in rec["redacted"] if p.startswith(path)]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=JSON)
def test_no_value_of_a_headers_meta_is_ever_recorded(meta: Any) -> None:
    """Whatever JSON a header's `_meta` holds, the record keeps none of its values: each is
    null or `<redacted>` (or the whole line is a placeholder)."""
    rec, _payload = recorded(http_header(meta), "client")
    if "msg" not in rec:
        assert rec["text"].startswith("<redacted: ")  # not recorded at all
        return
    got = pair_meta(rec["msg"], "$.params.mcpServers[0].headers[0]._meta")
    assert all(leaf in (None, "<redacted>") for leaf in leaves(got)), (meta, got)
