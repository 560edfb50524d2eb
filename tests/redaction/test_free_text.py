"""Credentials in free text in the recorded copy (redaction/free_text.py): in any string of
any message, in stray stdout and stderr, spelled with JSON escapes, in hostile lines, cut
lines; `--no-redact-content` and `--no-redact` keep them; the header says the policy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from acp_trace.redaction.redactor import RedactionPolicy, Redactor
from test_credentials import AWS, GITHUB, JWT, PEM, PEM_BODY, SLACK
from testpaths import SCRIPTS


def record(
    line: bytes, src: str = "client", redactor: Redactor | None = None, **kw: Any
) -> dict[str, Any]:
    """The record the writer makes of `line`, with the raw bytes under `_raw`."""
    payload = (redactor or Redactor()).line_payload(line, src, kw.get("max_bytes"))
    raw = b'{"seq":1,"t_ns":0,"src":"%s",%s}' % (src.encode(), payload)
    return dict(json.loads(raw)) | {"_raw": raw}


def req(method: str, params: Any, id_: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def resp(result: Any, id_: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


KEY = "sk-ant-api03-" + "Zq9_" * 23 + "xAA"


def update(content: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": content},
    }


# name, sender, message, the secret, the JSON paths listed
MESSAGES: list[tuple[str, str, Any, str, list[str]]] = [
    (
        "a key pasted into a prompt",
        "client",
        req("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": KEY}]}),
        KEY,
        ["$.params.prompt[0].text"],
    ),
    (
        "a .env file read by the agent",
        "client",
        resp({"content": f"# env\nOPENAI_API_KEY=hunter2-x\nAWS_ID={AWS}\nDEBUG=1\n"}, 4),
        "hunter2-x",
        ["$.result.content"],
    ),
    (
        "rawInput with an Authorization header",
        "agent",
        update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "rawInput": {"command": "curl -H 'Authorization: Bearer hunter2tok9' https://x"},
            }
        ),
        "hunter2tok9",
        ["$.params.update.rawInput.command"],
    ),
    (
        "an HttpHeader in _meta",
        "client",
        req(
            "session/prompt",
            {"sessionId": "s", "prompt": [], "_meta": {"h": {"name": "X", "value": JWT}}},
        ),
        JWT,
        ["$.params._meta.h.value"],
    ),
    (
        "a tool's output with a private key",
        "agent",
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t", "rawOutput": PEM}),
        PEM_BODY,
        ["$.params.update.rawOutput"],
    ),
    (
        "an error message",
        "agent",
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": f"bad token {GITHUB}"}},
        GITHUB,
        ["$.error.message"],
    ),
    (
        "a key in an object key",
        "agent",
        update({"sessionUpdate": "x", "seen": {SLACK: 1}}),
        SLACK,
        ['$.params.update.seen["<redacted:slack-bot-token>"]'],
    ),
    (
        "a batch",
        "client",
        [req("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": KEY}]})],
        KEY,
        ["$[0].params.prompt[0].text"],
    ),
]


@pytest.mark.parametrize(
    ("name", "src", "msg", "secret", "paths"), MESSAGES, ids=[c[0] for c in MESSAGES]
)
def test_credentials_in_any_string_of_a_message_are_replaced(
    name: str, src: str, msg: Any, secret: str, paths: list[str]
) -> None:
    """Only the span goes (the placeholder names its kind), the path is listed, the message
    stays a message."""
    rec = record(json.dumps(msg).encode(), src)
    assert secret.encode() not in rec["_raw"] and b"<redacted:" in rec["_raw"]
    assert rec["redacted"] == paths
    assert "jsonrpc" in json.dumps(rec["msg"])


ESCAPED = [
    ("a \\u002d in the key", json.dumps(KEY).replace("-", "\\u002d", 1)),
    ("all of it escaped", '"' + "".join(f"\\u{ord(c):04x}" for c in KEY) + '"'),
    ("a \\/ in a URL", '"postgres:\\/\\/app:hunter2pw@db\\/x"'),
    ("a lone surrogate beside it", '"\\ud800 ' + KEY + '"'),
]


@pytest.mark.parametrize(("name", "text"), ESCAPED, ids=[c[0] for c in ESCAPED])
def test_a_credential_spelled_with_json_escapes_is_replaced(name: str, text: str) -> None:
    """The prefilter sends escaped lines down the exact path: the decoded string is searched."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"t":%s}}' % text.encode()
    rec = record(line, "client")
    raw = rec["_raw"].decode()
    assert "hunter2pw" not in raw and "Zq9_Zq9_" not in raw
    assert rec["redacted"] == ["$.params.t"]


def test_stderr_and_stray_stdout_lines_are_redacted() -> None:
    """stderr ("using key sk-...") and stray stdout have the span replaced and say how many;
    --redact-stderr patterns still apply after it."""
    redactor = Redactor(RedactionPolicy(stderr_patterns=("internal-[0-9]+",)))
    rec = record(f"using key {KEY} on internal-42".encode(), "stderr", redactor)
    assert rec["text"] == "using key <redacted:anthropic-api-key> on <redacted>"
    assert rec["redaction"] == (
        "1 credential replaced (anthropic-api-key); 1 match of --redact-stderr replaced"
    )
    out = record(f"export GITHUB_TOKEN={GITHUB}".encode(), "agent")
    assert "GITHUB_TOKEN=<redacted:" in out["_raw"].decode() or "redaction" in out
    assert GITHUB.encode() not in out["_raw"]
    plain = record(f"token {GITHUB} in a log".encode(), "agent")
    assert plain["text"] == "token <redacted:github-pat> in a log"
    escaped = record(b'{"k":"sk\\u002dant-api03-' + b"Zq9_" * 23 + b'xAA"', "stderr")
    assert b"Zq9_" not in escaped["_raw"] and escaped["text"].startswith("<redacted:")


def test_a_key_printed_to_stderr_line_by_line_is_replaced() -> None:
    """Each line of a private key block on stderr is replaced, up to its END line."""
    redactor = Redactor()
    recs = [record(line.encode(), "stderr", redactor) for line in PEM.split("\n")]
    recs.append(record(b"next", "stderr", redactor))
    assert all(PEM_BODY not in rec["text"] for rec in recs)
    assert recs[-1]["text"] == "next" and "redaction" not in recs[-1]


def test_a_cut_line_keeps_no_part_of_a_credential() -> None:
    """A line cut by --max-record-bytes ends before a credential that the cut would split."""
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"t":"' + b"x" * 90
    line = head + f" {GITHUB} more".encode() + b"y" * 500 + b'"}}'
    rec = record(line, "agent", max_bytes=110)
    assert rec["truncated"] is True and rec["bytes"] == len(line)
    assert GITHUB[:6] not in rec["text"] and rec["text"].startswith('{"jsonrpc"')
    err = record(b"x" * 50 + b" " + KEY.encode() + b" " + b"z" * 100, "stderr", max_bytes=80)
    assert b"Zq9_" not in err["_raw"] and err["truncated"] is True


def test_no_redact_content_and_no_redact_keep_free_text() -> None:
    """`content=False` keeps credentials in text (the ACP fields are still redacted);
    `enabled=False` keeps everything; the header says which."""
    servers = [{"name": "s", "command": "c", "args": [], "env": [{"name": "T", "value": "pw"}]}]
    line = json.dumps(req("session/new", {"cwd": KEY, "mcpServers": servers})).encode()
    kept = Redactor(RedactionPolicy(content=False))
    rec = record(line, "client", kept)
    assert rec["msg"]["params"]["cwd"] == KEY
    assert rec["redacted"] == ["$.params.mcpServers[0].env[0].value"]
    assert record(line, "client")["msg"]["params"]["cwd"] == "<redacted:anthropic-api-key>"
    prompt = json.dumps(req("session/prompt", {"sessionId": "s", "prompt": KEY})).encode()
    assert KEY.encode() in record(prompt, "client", kept)["_raw"]
    assert record(KEY.encode(), "stderr", kept)["text"] == KEY
    assert kept.policy.header()["content"] is False
    off = Redactor(RedactionPolicy(enabled=False))
    assert KEY.encode() in record(prompt, "client", off)["_raw"]
    assert record(KEY.encode(), "stderr", off)["text"] == KEY
    header = Redactor().policy.header()
    assert header["policy"] == "acp-secrets/4"
    assert "anthropic-api-key" in header["content"]["kinds"]
    assert header["content"]["source"]["license"] == "MIT"


def test_hostile_lines_never_leak_and_stay_linear() -> None:
    """Huge strings, deep nesting, lone surrogates: each line is recorded without the key, in
    a subprocess under a generous hang guard."""
    code = textwrap.dedent(
        f"""
        from acp_trace.redaction.redactor import Redactor
        key = {KEY!r}.encode()
        r = Redactor()
        lines = [
            b'{{"jsonrpc":"2.0","method":"x","params":{{"t":"' + b"eyJ" * 2_000_000 + b" " + key + b'"}}}}',
            b"[" * 100_000 + b'"' + key + b'"' + b"]" * 100_000,
            b'{{"jsonrpc":"2.0","method":"x","params":' + b"[" * 100_000 + b'"\\\\u0073' + key[1:]
            + b'"' + b"]" * 100_000 + b"}}",
            b'{{"jsonrpc":"2.0","method":"x","params":' + b"[" * 900 + b'"' + key + b'"'
            + b"]" * 900 + b"}}",
            b'{{"jsonrpc":"2.0","method":"x","params":{{"t":"\\\\ud800' + b"API_KEY=" * 300_000
            + key + b'"}}}}',
            b"x://" * 1_000_000 + key,
        ]
        for src in ("client", "agent", "stderr"):
            for line in lines:
                payload = r.line_payload(line, src)
                assert b"Zq9_Zq9_" not in payload, (src, line[:40], payload[:200])
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_recording_redacts_stderr_and_prompts_end_to_end(tmp_path: Any) -> None:
    """`record` replaces a key on the agent's stderr and in a prompt, forwards both as sent;
    with --no-redact-content the trace keeps them."""
    (tmp_path / "err").write_bytes(f"using key {KEY}\n".encode())
    prompt = req("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": KEY}]})
    (tmp_path / "in").write_bytes(json.dumps(prompt).encode() + b"\n")
    agent = [sys.executable, str(SCRIPTS / "agent.py"), "--stderr", str(tmp_path / "err")]
    for options, kept in (((), False), (("--no-redact-content",), True)):
        trace = tmp_path / f"t{len(options)}.jsonl"
        command = [sys.executable, "-m", "acp_trace", "record", "-o", str(trace), *options]
        with (tmp_path / "in").open("rb") as stdin:
            done = subprocess.run(
                [*command, "--", *agent], stdin=stdin, capture_output=True, timeout=120
            )
        assert KEY.encode() in done.stderr  # forwarded as sent
        text = trace.read_text()
        assert (KEY in text) is kept, text[:2000]
        head = json.loads(text.splitlines()[0])
        assert head["redaction"]["content"] is False if kept else head["redaction"]["content"]
