"""Redaction of the recorded copy (redaction/redactor.py): every secret of the policy, every way a
line could slip past it, the lines that must stay text, stderr patterns and the header."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_trace.errors import RecordError
from acp_trace.redaction import policy, redactor
from acp_trace.redaction.redactor import RedactionPolicy, Redactor, redact_command
from acp_trace.redaction.rules import Pending
from acp_trace.trace.format import encode_header
from acp_trace.trace.reader import read_trace
from testpaths import ROOT, SCRIPTS

S = "hunter2-secret"  # every secret in the tables; it must never reach a record


@cache
def validator() -> jsonschema.protocols.Validator:
    text = resources.files("acp_trace.trace").joinpath("trace-format.schema.json").read_text()
    return jsonschema.Draft202012Validator(json.loads(text))


def record(
    line: bytes, src: str = "client", redactor: Redactor | None = None, **kw: Any
) -> dict[str, Any]:
    """The record the writer makes of `line`, schema-checked, with the raw bytes under `_raw`."""
    payload = (redactor or Redactor()).line_payload(line, src, kw.get("max_bytes"))
    raw = b'{"seq":1,"t_ns":0,"src":"%s",%s}' % (src.encode(), payload)
    value = json.loads(raw)
    validator().validate(value)
    return value | {"_raw": raw}


def line_of(msg: Any) -> bytes:
    return json.dumps(msg).encode()


def req(method: str, params: Any, id_: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def resp(result: Any, id_: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def server(**fields: Any) -> dict[str, Any]:
    return {"cwd": "/w", "mcpServers": [{"name": "s", "command": "/bin/s", "args": [], **fields}]}


MCP = "$.params.mcpServers[0]"
AM = "$.result.authMethods[0]"

# name, sender, message, the JSON paths the record must list
SECRETS: list[tuple[str, str, Any, list[str]]] = [
    (
        "stdio env",
        "client",
        req("session/new", server(env=[{"name": "T", "value": S}])),
        [f"{MCP}.env[0].value"],
    ),
    (
        "env as an object",
        "client",
        req("session/load", server(env={"TOKEN": S, "odd key": S})),
        [f"{MCP}.env.TOKEN", f'{MCP}.env["odd key"]'],
    ),
    (
        "env entry as a string",
        "client",
        req("session/new", server(env=[f"TOKEN={S}"])),
        [f"{MCP}.env[0]"],
    ),
    (
        "http headers",
        "client",
        req(
            "session/resume",
            {
                "mcpServers": [
                    {
                        "type": "http",
                        "name": "h",
                        "url": "https://h/mcp",
                        "headers": [{"name": "Authorization", "value": f"Bearer {S}"}],
                    }
                ]
            },
        ),
        [f"{MCP}.headers[0].value"],
    ),
    (
        "sse url userinfo",
        "client",
        req(
            "session/fork",
            {
                "mcpServers": [
                    {"type": "sse", "name": "h", "url": f"https://me:{S}@h/sse", "headers": []}
                ]
            },
        ),
        [f"{MCP}.url"],
    ),
    (
        "url query",
        "client",
        req(
            "session/new",
            {
                "mcpServers": [
                    {"type": "http", "name": "h", "url": f"https://h/mcp?api_key={S}&x=1"}
                ]
            },
        ),
        [f"{MCP}.url"],
    ),
    (
        "args --api-key X",
        "client",
        req("session/new", server(args=["--api-key", S, "--verbose"])),
        [f"{MCP}.args[1]"],
    ),
    (
        "args --header Authorization",
        "client",
        req("session/new", server(args=["--header", f"Authorization: Bearer {S}"])),
        [f"{MCP}.args[1]"],
    ),
    (
        "args --token=X and NAME=X",
        "client",
        req("session/new", server(args=[f"--token={S}", f"GITHUB_TOKEN={S}"])),
        [f"{MCP}.args[0]", f"{MCP}.args[1]"],
    ),
    (
        "args script",
        "client",
        req(
            "session/new",
            server(
                command="/bin/sh", args=["-c", f"curl -H 'Authorization: Bearer {S}' https://h"]
            ),
        ),
        [f"{MCP}.args[1]"],
    ),
    (
        "unknown transport's credential key",
        "client",
        req("session/new", {"mcpServers": [{"type": "ws", "name": "w", "apiKey": S}]}),
        [f"{MCP}.apiKey"],
    ),
    (
        "mcpServers sent by the agent",
        "agent",
        req("session/new", server(env=[{"name": "T", "value": S}])),
        [f"{MCP}.env[0].value"],
    ),
    (
        "providers/set",
        "client",
        req(
            "providers/set",
            {
                "providerId": "p",
                "apiType": "openai",
                "baseUrl": f"https://api/v1?key={S}",
                "headers": {"Authorization": S},
            },
        ),
        ["$.params.headers.Authorization", "$.params.baseUrl"],
    ),
    (
        "providers/list response",
        "agent",
        resp(
            {
                "providers": [
                    {
                        "providerId": "p",
                        "supported": [],
                        "required": False,
                        "current": {"apiType": "openai", "baseUrl": f"https://u:{S}@api/v1"},
                    }
                ]
            }
        ),
        ["$.result.providers[0].current.baseUrl"],
    ),
    (
        "initialize v2 authMethods env",
        "agent",
        resp(
            {
                "protocolVersion": 2,
                "authMethods": [
                    {
                        "type": "terminal",
                        "methodId": "t",
                        "name": "Login",
                        "args": ["--token", S],
                        "env": [{"name": "K", "value": S}],
                    }
                ],
            }
        ),
        [f"{AM}.args[1]", f"{AM}.env[0].value"],
    ),
    (
        "initialize v1 authMethods env object",
        "agent",
        resp(
            {
                "protocolVersion": 1,
                "authMethods": [
                    {"type": "terminal", "id": "t", "name": "Login", "env": {"API_KEY": S}}
                ],
            }
        ),
        [f"{AM}.env.API_KEY"],
    ),
    (
        "authenticate",
        "client",
        req("authenticate", {"methodId": "api-key", "apiKey": S, "_meta": {"x": S}}),
        ["$.params.apiKey", "$.params._meta"],
    ),
    (
        "auth/login",
        "client",
        req("auth/login", {"methodId": "token", "credentials": {"token": S}}),
        ["$.params.credentials"],
    ),
    ("auth/* with positional params", "client", req("auth/login", [S]), ["$.params"]),
    (
        "terminal/create (agent)",
        "agent",
        req(
            "terminal/create",
            {
                "sessionId": "s",
                "command": "npm",
                "args": ["publish", f"--otp={S}"],
                "env": [{"name": "NPM_TOKEN", "value": S}],
            },
        ),
        ["$.params.env[0].value", "$.params.args[1]"],
    ),
    (
        "elicitation/create url",
        "agent",
        req(
            "elicitation/create",
            {
                "sessionId": "s",
                "mode": "url",
                "elicitationId": "e",
                "url": f"https://login/cb?code={S}",
                "message": "m",
            },
        ),
        ["$.params.url"],
    ),
    (
        "unpaired form answer",
        "client",
        resp({"action": "accept", "content": {"password": S, "pin": 1234}}),
        ["$.result.content.password", "$.result.content.pin"],
    ),
    (
        "_meta credential key (agent update)",
        "agent",
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "tool_call",
                    "_meta": {"vendor": {"accessToken": S, "tool": "x"}},
                },
            },
        },
        ["$.params.update._meta.vendor.accessToken"],
    ),
    (
        "_meta headers (client prompt)",
        "client",
        req(
            "session/prompt",
            {
                "sessionId": "s",
                "prompt": [],
                "_meta": {"headers": [{"name": "Cookie", "value": S}]},
            },
        ),
        ["$.params._meta.headers[0].value"],
    ),
    (
        "_meta URL string",
        "client",
        req(
            "session/prompt",
            {"sessionId": "s", "prompt": [], "_meta": {"proxy": f"http://u:{S}@p"}},
        ),
        ["$.params._meta.proxy"],
    ),
    ("escaped key \\u0065nv", "client", None, [f"{MCP}.env[0].value"]),
    ("escaped method auth\\/login", "client", None, ["$.params.key"]),
    (
        "a batch",
        "client",
        [
            req("session/prompt", {"sessionId": "s", "prompt": []}),
            req("session/new", server(env=[{"name": "T", "value": S}]), 2),
        ],
        [f"$[1]{MCP[1:]}.env[0].value"],
    ),
    ("a huge integer id", "client", None, ["$.params.key"]),
]
ESCAPED = {
    "escaped key \\u0065nv": line_of(
        req("session/new", server(env=[{"name": "T", "value": S}]))
    ).replace(b'"env"', b'"\\u0065nv"'),
    "escaped method auth\\/login": b'{"jsonrpc":"2.0","id":1,"method":"auth\\/login","params":{"methodId":"k","key":"%s"}}'
    % S.encode(),
    "a huge integer id": b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"authenticate","params":{"methodId":"k","key":"%s"}}'
    % S.encode(),
}


@pytest.mark.parametrize(("name", "src", "msg", "paths"), SECRETS, ids=[c[0] for c in SECRETS])
def test_every_secret_of_the_policy_is_replaced(
    name: str, src: str, msg: Any, paths: list[str]
) -> None:
    """Each secret path becomes <redacted>, its path is listed, the rest of the message stays."""
    line = ESCAPED[name] if msg is None else line_of(msg)
    rec = record(line, src)
    assert rec["redacted"] == paths
    assert S.encode() not in rec["_raw"]
    if "huge" in name:
        assert b"123456789012345678901234567890" in rec["_raw"]
    assert "jsonrpc" in (rec["msg"][0] if isinstance(rec["msg"], list) else rec["msg"])


# Lines spliced byte for byte: near misses of the rules above.
KEPT: list[tuple[str, str, Any]] = [
    (
        "tool input with env is content",
        "agent",
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {"sessionUpdate": "tool_call", "rawInput": {"env": {"A": "visible"}}},
            },
        },
    ),
    (
        "a prompt that talks about secrets",
        "client",
        req(
            "session/prompt",
            {
                "sessionId": "s",
                "prompt": [
                    {
                        "type": "text",
                        "text": "where does the apiKey of session/new go, and the Authorization header?",
                    }
                ],
            },
        ),
    ),
    (
        "an agent response with result.action",
        "agent",
        resp({"action": "accept", "content": {"a": "visible"}}),
    ),
    (
        "_meta keys that name no credential",
        "client",
        req(
            "session/prompt",
            {
                "sessionId": "s",
                "prompt": [],
                "_meta": {"author": "me", "keyboard": "us", "monitor": 1},
            },
        ),
    ),
    ("a null env value", "client", req("session/new", server(env=[{"name": "A", "value": None}]))),
    (
        "a server without secrets",
        "client",
        req("session/new", server(args=["--verbose", "--port", "3000"])),
    ),
    (
        "a URL without credentials",
        "client",
        req(
            "session/new",
            {
                "mcpServers": [
                    {"type": "http", "name": "h", "url": "https://h/mcp?page=2", "headers": []}
                ]
            },
        ),
    ),
    (
        "a file read answered with the word token",
        "client",
        resp({"content": "token = os.environ['TOKEN']"}),
    ),
    ("authenticate's methodId alone", "client", req("authenticate", {"methodId": "oauth"})),
    (
        "session/update text",
        "agent",
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "caf\u00e9 \\u0065"},
                },
            },
        },
    ),
]


@pytest.mark.parametrize(("name", "src", "msg"), KEPT, ids=[c[0] for c in KEPT])
def test_lines_without_policy_secrets_are_spliced_as_sent(name: str, src: str, msg: Any) -> None:
    """Content, other senders, harmless names and absent values are recorded exactly as sent."""
    line = b"  " + line_of(msg) + b"\r"
    rec = record(line, src)
    assert "redacted" not in rec and "redaction" not in rec
    assert rec["_raw"].endswith(b',"msg":' + line.strip() + b"}")


PRETTY = json.dumps(
    req("session/new", server(env=[{"name": "TOKEN", "value": S}], args=["--api-key", S])), indent=2
)
# name, sender, line, a word the placeholder's note must have
FAIL_OPEN: list[tuple[str, str, bytes, str]] = [
    (
        "NaN",
        "client",
        line_of(req("session/new", server(env=[{"name": "T", "value": S}]))).replace(
            b'"cwd": "/w"', b'"cwd": NaN'
        ),
        "NaN",
    ),
    (
        "Infinity",
        "client",
        b'{"jsonrpc":"2.0","id":Infinity,"method":"authenticate","params":{"k":"%s"}}' % S.encode(),
        "Infinity",
    ),
    (
        "a Latin-1 byte",
        "client",
        line_of(req("authenticate", {"methodId": "caf\xe9", "key": S})).replace(
            b"\\u00e9", b"\xe9"
        ),
        "UTF-8",
    ),
    (
        "trailing bytes",
        "client",
        line_of(req("authenticate", {"methodId": "k", "key": S})) + b" x",
        "strict JSON",
    ),
    (
        "two objects on a line",
        "client",
        line_of(req("authenticate", {"key": S})) * 2,
        "strict JSON",
    ),
    (
        "duplicate params",
        "client",
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":%s,"params":{"cwd":"/"}}'
        % line_of(server(env=[{"name": "T", "value": S}])),
        "duplicate key (params)",
    ),
    (
        "duplicate method",
        "client",
        b'{"jsonrpc":"2.0","id":1,"method":"authenticate","method":"x","params":{"key":"%s"}}'
        % S.encode(),
        "duplicate key (method)",
    ),
    (
        "duplicate env inside a server",
        "client",
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"mcpServers":[{"env":[{"name":"T","value":"%s"}],"env":[]}]}}'
        % S.encode(),
        "duplicate key (env)",
    ),
    (
        "a huge integer (5000 digits)",
        "client",
        b'{"jsonrpc":"2.0","id":%s,"method":"authenticate","params":{"key":"%s"}}'
        % (b"9" * 5000, S.encode()),
        "exactly",
    ),
    (
        "a number beyond double range",
        "client",
        b'{"jsonrpc":"2.0","id":1e400,"method":"authenticate","params":{"key":"%s"}}' % S.encode(),
        "double",
    ),
    (
        "escaped method, broken JSON",
        "client",
        b'{"method":"session\\/new","params":{"mcpServers":[{"env":[{"value":"%s"}]}]}'
        % S.encode(),
        "session/new",
    ),
    (
        "escaped key, not JSON",
        "client",
        b'  "\\u0065nv": [{"name":"TOKEN","value":"%s"}],' % S.encode(),
        "escape",
    ),
    (
        "a pretty-printed env line",
        "client",
        b'  "env": [{"name":"TOKEN","value":"%s"}],' % S.encode(),
        "env",
    ),
    (
        "unquoted keys (JSON5)",
        "client",
        b'{method:"x",params:{mcpServers:[{env:[{name:"T",value:"%s"}]}]}}' % S.encode(),
        "key",
    ),
    (
        "a JSON object that is no message",
        "agent",
        b'{"name":"T","value":"%s"}' % S.encode(),
        "value",
    ),
    (
        "a credential-named key alone",
        "agent",
        b'{"Authorization":"Bearer %s"}' % S.encode(),
        "credential",
    ),
    ("a bare JSON string", "client", b'"%s"' % S.encode(), "pretty-printed"),
    ("a header in stray stdout", "agent", b"Authorization: Bearer %s" % S.encode(), "credential"),
    ("an env word in stray stdout", "agent", b"export OPENAI_API_KEY=%s" % S.encode(), "key"),
    (
        "a URL with credentials in stray stdout",
        "agent",
        b"connecting to postgres://app:%s@db/prod" % S.encode(),
        "URL",
    ),
    (
        "a deep structure with env",
        "client",
        b"[" * 100000 + b'{"env":"%s"}' % S.encode() + b"]" * 100000,
        "env",
    ),
    (
        "a non-message batch with env",
        "client",
        line_of([{"env": [{"name": "T", "value": S}]}]),
        "not a JSON-RPC message",
    ),
]


@pytest.mark.parametrize(("name", "src", "line", "word"), FAIL_OPEN, ids=[c[0] for c in FAIL_OPEN])
def test_lines_that_cannot_be_redacted_exactly_become_placeholders(
    name: str, src: str, line: bytes, word: str
) -> None:
    """A line that may hold a secret and cannot be redacted exactly is its byte count and why."""
    rec = record(line, src)
    assert rec["text"] == f"<redacted: {len(line)} bytes>" and rec["bytes"] == len(line)
    assert word in rec["redaction"], rec["redaction"]
    assert S.encode() not in rec["_raw"]


def test_a_pretty_printed_message_leaks_no_line() -> None:
    """Each line of a message pretty-printed over several lines is judged alone: none shows a secret."""
    redactor = Redactor()
    records = [record(line.encode(), "client", redactor) for line in PRETTY.splitlines()]
    assert all(S not in json.dumps(rec["text"] if "text" in rec else rec["msg"]) for rec in records)
    assert sum("redaction" in rec for rec in records) >= 4  # the key lines
    assert [rec["text"] for rec in records if "redaction" not in rec][:1] == ["{"]  # braces stay


# Lines that cannot hold a policy secret stay evidence: near misses of the list above.
STAY: list[tuple[str, str, bytes, str]] = [
    ("a log line", "agent", b"Starting server on port 3000", "text"),
    ("an error", "agent", b"Error: connect ECONNREFUSED 127.0.0.1:3000", "text"),
    (
        "a URL without credentials",
        "agent",
        b"Debugger listening on ws://127.0.0.1:9229/abc",
        "text",
    ),
    ("a closing brace", "client", b"  ],", "text"),
    ("the word authenticate", "agent", b"please authenticate first (see auth docs)", "text"),
    (
        "NaN without a secret key",
        "agent",
        b'{"jsonrpc":"2.0","method":"session/update","params":{"x":NaN}}',
        "text",
    ),
    ("a JSON log line", "agent", b'{"level":"info","msg":"started"}', "msg"),
    ("invalid UTF-8 without keys", "agent", b"\xff\xfe binary", "b64"),
    ("an empty line", "client", b"", "text"),
    ("a deep structure without keys", "agent", b"[" * 100000 + b"]" * 100000, "text"),
]


@pytest.mark.parametrize(("name", "src", "line", "kind"), STAY, ids=[c[0] for c in STAY])
def test_lines_that_cannot_hold_a_secret_stay_recorded(
    name: str, src: str, line: bytes, kind: str
) -> None:
    """Stray stdout without a redacted method name or secret-bearing key stays text (or msg, b64)."""
    rec = record(line, src)
    assert kind in rec and "redaction" not in rec


def test_stderr_is_never_read_as_a_message() -> None:
    """stderr is text, never a JSON-RPC message: the ACP rules do not apply to it (no
    placeholder, no paths); a `NAME value` phrase has its value replaced (free_text.py)."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"apiKey":"%s"}}' % S.encode()
    rec = record(line, "stderr")
    assert rec["text"] == line.decode().replace(S, "<redacted:credential-phrase>")
    assert "redacted" not in rec and "bytes" not in rec


def test_redact_stderr_patterns_replace_matches() -> None:
    """Every match of every pattern becomes <redacted>; the record says how many, b64 lines too."""
    redactor = Redactor(RedactionPolicy(stderr_patterns=("hunter2-[a-z]+", r"tok_\w+")))
    rec = record(b"auth with hunter2-secret and tok_abc, hunter2-secret again", "stderr", redactor)
    assert rec["text"] == "auth with <redacted> and <redacted>, <redacted> again"
    assert rec["redaction"] == "3 matches of --redact-stderr replaced"
    rec = record(b"\xff hunter2-secret", "stderr", redactor)
    assert "b64" in rec and b"hunter2" not in rec["_raw"]
    assert "redaction" not in record(b"nothing here", "stderr", redactor)
    cut = record(b"x hunter2-secret " + b"y" * 100, "stderr", redactor, max_bytes=20)
    assert cut["text"] == "x <redacted> yyyyyyy" and cut["bytes"] == 117


@pytest.mark.parametrize("pattern", ["(unclosed", "x*", ""])
def test_bad_stderr_patterns_are_refused(pattern: str) -> None:
    """A pattern that is no regex, or matches the empty string, is a RecordError at start."""
    with pytest.raises(RecordError, match="--redact-stderr"):
        Redactor(RedactionPolicy(stderr_patterns=(pattern,)))


def test_form_answers_are_paired_by_id_per_sender() -> None:
    """The client's answer to the agent's elicitation/create is redacted whole; the same id
    from the agent (answering a client request), or of another type, is not that answer."""
    redactor = Redactor()
    form = req(
        "elicitation/create",
        {
            "sessionId": "s",
            "mode": "form",
            "message": "key?",
            "requestedSchema": {"type": "object"},
        },
        7,
    )
    assert "redacted" not in record(line_of(form), "agent", redactor)
    assert "redacted" not in record(line_of(resp({"answer": "visible"}, 7)), "agent", redactor)
    assert "redacted" not in record(line_of(resp({"answer": "visible"}, "7")), "client", redactor)
    answer = record(
        line_of(resp({"action": "accept", "content": {"answer": S}, "extra": S}, 7)),
        "client",
        redactor,
    )
    assert answer["redacted"] == ["$.result.content.answer", "$.result.extra"]
    again = record(line_of(resp({"answer": "visible"}, 7)), "client", redactor)
    assert "redacted" not in again  # answered once: the id is free again


def test_pairing_state_is_bounded() -> None:
    """A side that never answers costs at most PENDING_LIMIT entries; the oldest are forgotten."""
    pending = Pending(limit=100)
    for n in range(1000):
        pending.add(("n", n), "elicitation/create")
    assert len(pending) == 100 and pending.forgotten == 900
    assert pending.pop(("n", 0)) is None and pending.pop(("n", 999)) == "elicitation/create"
    redactor = Redactor()
    for n in range(5000):
        redactor.line_payload(line_of(req("fs/read_text_file", {"path": "/x"}, n)), "agent")
    assert len(redactor.pending["agent"]) == 1024
    fresh = Redactor()
    fresh.line_payload(line_of(req("elicitation/create", {}, "x" * 100_000)), "agent")
    assert len(fresh.pending["agent"]) == 0  # an id too long to keep is not paired


# Lines longer than --max-record-bytes: judged by the first bytes, the only ones recorded.
BIG = "x" * 500
CUT: list[tuple[str, str, bytes, bool]] = [
    (
        "secret key in the first bytes",
        "client",
        line_of(req("session/new", server(env=[{"name": "T", "value": S + BIG}]))),
        True,
    ),
    (
        "params before the method",
        "client",
        line_of(
            {"params": {"apiKey": S + BIG}, "method": "authenticate", "jsonrpc": "2.0", "id": 1}
        ),
        True,
    ),
    ("a batch", "client", line_of([req("session/prompt", {"text": BIG})]), True),
    (
        "a client response of unknown id",
        "client",
        line_of(resp({"content": {"pw": S + BIG}}, 99)),
        True,
    ),
    ("stray stdout with a credential", "agent", f"Authorization: Bearer {S}{BIG}".encode(), True),
    (
        "an agent update",
        "agent",
        line_of({"jsonrpc": "2.0", "method": "session/update", "params": {"text": BIG}}),
        False,
    ),
    (
        "a prompt",
        "client",
        line_of(
            req("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": BIG}]})
        ),
        False,
    ),
    ("an agent response", "agent", line_of(resp({"content": BIG}, 5)), False),
    ("plain stray stdout", "agent", BIG.encode(), False),
]


@pytest.mark.parametrize(("name", "src", "line", "hidden"), CUT, ids=[c[0] for c in CUT])
def test_cut_lines_that_may_hold_a_secret_are_placeholders(
    name: str, src: str, line: bytes, hidden: bool
) -> None:
    """A cut line is a placeholder when its first bytes may hold a secret, else its cut text."""
    rec = record(line, src, max_bytes=120)
    assert rec["truncated"] is True and rec["bytes"] == len(line)
    assert ("redaction" in rec) is hidden
    assert S.encode() not in rec["_raw"]
    if not hidden:
        assert rec["text"].encode() == line[:120]


def test_a_cut_file_read_answer_is_text_when_paired() -> None:
    """The client's answer to the agent's fs/read_text_file is known by its id: cut text."""
    redactor = Redactor()
    record(line_of(req("fs/read_text_file", {"path": "/x"}, 3)), "agent", redactor)
    rec = record(line_of(resp({"content": "token " + BIG}, 3)), "client", redactor, max_bytes=100)
    assert "redaction" not in rec and rec["truncated"] is True
    form = req("elicitation/create", {"mode": "form", "requestedSchema": {}}, 4)
    record(line_of(form), "agent", redactor)
    assert "redaction" in record(
        line_of(resp({"content": {"k": BIG}}, 4)), "client", redactor, max_bytes=100
    )


def test_no_redact_records_everything_as_sent() -> None:
    """With the policy off, a secret is spliced byte for byte (stderr patterns still apply)."""
    line = line_of(req("authenticate", {"methodId": "k", "key": S}))
    off = Redactor(RedactionPolicy(enabled=False, stderr_patterns=("hunter2",)))
    assert record(line, "client", off)["_raw"].endswith(b',"msg":' + line + b"}")
    assert record(b"hunter2", "stderr", off)["text"] == "<redacted>"
    assert off.policy.header() == {"policy": "none", "stderr_patterns": 1}


COMMANDS: list[tuple[list[str], list[str]]] = [
    (["codex-acp", "--api-key", S], ["codex-acp", "--api-key", "<redacted>"]),
    (["agent", f"--token={S}"], ["agent", "--token=<redacted>"]),
    (["env", f"OPENAI_API_KEY={S}", "agent"], ["env", "OPENAI_API_KEY=<redacted>", "agent"]),
    (["agent", "-H", f"Authorization: Bearer {S}"], ["agent", "-H", "Authorization: <redacted>"]),
    (
        ["sh", "-c", f"GH_PAT={S} agent --password '{S}'"],
        ["sh", "-c", "GH_PAT=<redacted> agent --password '<redacted>'"],
    ),
    (
        ["agent", "--url", f"https://u:{S}@h/x?access_token={S}"],
        ["agent", "--url", "https://u:<redacted>@h/x?access_token=<redacted>"],
    ),
    (["agent", "-u", f"me:{S}"], ["agent", "-u", "me:<redacted>"]),
    (
        ["node", "server.js", "--port", "3000", "--verbose"],
        ["node", "server.js", "--port", "3000", "--verbose"],
    ),
    (["agent", "--token", "--verbose"], ["agent", "--token", "--verbose"]),
    (
        ["agent", "--author", "me", "KEYBOARD=us", "https://h/a?page=1"],
        ["agent", "--author", "me", "KEYBOARD=us", "https://h/a?page=1"],
    ),
]


@pytest.mark.parametrize(
    ("argv", "expected"), COMMANDS, ids=[" ".join(c[0])[:40] for c in COMMANDS]
)
def test_the_header_command_loses_its_credentials(argv: list[str], expected: list[str]) -> None:
    """Credential flags, headers, NAME=value words and URL credentials; other words stay."""
    scrubbed, paths = redact_command(argv)
    assert scrubbed == expected
    assert paths == [
        f"$.command[{i}]" for i, (a, b) in enumerate(zip(argv, expected, strict=True)) if a != b
    ]


NAMES = [
    ("apiKey", True),
    ("API_KEY", True),
    ("x-api-key", True),
    ("Authorization", True),
    ("Proxy-Authorization", True),
    ("cookie", True),
    ("client_secret", True),
    ("password", True),
    ("GITHUB_PAT", True),
    ("accessToken", True),
    ("OAuth2Token", True),
    ("sig", True),
    ("author", False),
    ("keyboard", False),
    ("path", False),
    ("name", False),
    ("value", False),
    ("sessionId", False),
    ("methodId", False),
    ("pinned", False),
    ("passport", False),
]


@pytest.mark.parametrize(("name", "expected"), NAMES, ids=[n for n, _ in NAMES])
def test_credential_names(name: str, expected: bool) -> None:
    """The documented matching of credential names, with near misses."""
    from acp_trace.redaction.secrets import names_credential

    assert names_credential(name) is expected


def test_placeholders_validate_and_read_back(tmp_path: Path) -> None:
    """A placeholder is a valid v1 record the reader reads as a text row; the header validates."""
    head = {"started_at": "2026-11-30T10:11:06.123456Z", "command": ["a"], "cwd": "/", "pid": 1}
    header = encode_header(
        {
            **head,
            "recorder": "acp-trace t",
            "redaction": redactor.POLICY,
            "redacted": ["$.command[0]"],
        }
    )
    validator().validate(json.loads(header))
    line = b'  "env": [{"name":"TOKEN","value":"x"}],'
    payload = Redactor().line_payload(line, "client")
    path = tmp_path / "t.jsonl"
    path.write_bytes(header + b'{"seq":1,"t_ns":5,"src":"client",%s}\n' % payload)
    rows = read_trace(path)
    text = [r for r in rows.iter_rows(named=True) if r["kind"] == "text"]
    assert len(text) == 1 and text[0]["text"] == f"<redacted: {len(line)} bytes>"
    assert not [r for r in rows.iter_rows(named=True) if r["kind"] == "malformed"]


def test_the_docs_table_lists_every_rule() -> None:
    """docs/trace-format.md's policy table has a row per rule, with its methods and paths."""
    doc = (ROOT / "docs" / "trace-format.md").read_text()
    section = doc.split("## Redaction", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) == len(policy.RULES)
    for row, rule in zip(rows, policy.RULES, strict=True):
        assert all(f"`{method}`" in row for method in rule.methods), row
        assert f"| {rule.sender} | {rule.message} |" in row, row
        for path in rule.paths:
            base = path.removesuffix(" (credentials)")
            assert (f"`{base}` (credentials)" if base != path else f"`{base}`") in row, row
    assert redactor.POLICY["policy"] == "acp-secrets/4" and f"{policy.POLICY_ID}" in section


def test_recording_redacts_the_header_and_stderr(tmp_path: Path) -> None:
    """End to end: `record --redact-stderr` replaces stderr matches and the header's command."""
    (tmp_path / "err").write_bytes(b"leaked hunter2-secret here\n")
    (tmp_path / "in").write_bytes(line_of(req("authenticate", {"methodId": "k", "key": S})) + b"\n")
    trace = tmp_path / "t.jsonl"
    agent = [
        "env",
        f"API_KEY={S}",
        sys.executable,
        str(SCRIPTS / "agent.py"),
        "--stderr",
        str(tmp_path / "err"),
    ]
    command = [
        sys.executable,
        "-m",
        "acp_trace",
        "record",
        "-o",
        str(trace),
        "--redact-stderr",
        "hunter2-[a-z]+",
        "--",
        *agent,
    ]
    with (tmp_path / "in").open("rb") as stdin:
        done = subprocess.run(command, stdin=stdin, capture_output=True, timeout=60)
    assert b"hunter2-secret" in done.stderr  # forwarded as sent
    lines = [json.loads(line) for line in trace.read_bytes().splitlines()]
    for value in lines:
        validator().validate(value)
    assert S not in trace.read_text()
    head = lines[0]
    assert head["command"][:2] == ["env", "API_KEY=<redacted>"] and head["redacted"] == [
        "$.command[1]"
    ]
    assert head["redaction"]["stderr_patterns"] == 1
    errs = [r for r in lines[1:] if r.get("src") == "stderr"]
    assert errs[0]["text"] == "leaked <redacted> here" and errs[0]["redaction"].startswith(
        "1 match"
    )
