"""`NAME value` phrases on stderr (issue 44): `using key VALUE` has its value replaced when NAME
names a credential and VALUE looks like one (credentials/assignment.py, free_text.py), in the
recorded copy and in what the outputs write; the agents' real stderr keeps every near miss."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from acp_trace.credentials import redact_phrases
from acp_trace.redaction.redactor import RedactionPolicy, Redactor

PHRASE = "<redacted:credential-phrase>"


def record(line: bytes, src: str = "stderr", **kw: Any) -> dict[str, Any]:
    """The record the writer makes of `line`."""
    payload = Redactor(kw.pop("policy", RedactionPolicy())).line_payload(line, src, **kw)
    return dict(json.loads(b'{"src":"%s",%s}' % (src.encode(), payload)))


HITS = [
    ("using key 3f9c2a71e0b4d8", f"using key {PHRASE}"),
    ("Using API key: sk_9f8e7d6c5b4a for requests", f"Using API key: {PHRASE} for requests"),
    ("token ZZ9plural0alpha expired", f"token {PHRASE} expired"),
    ('config {"apiKey": "q1w2e3r4t5y6"}', f'config {{"apiKey": "{PHRASE}"}}'),
    ("auth_token\t'abc123def456'", f"auth_token\t'{PHRASE}'"),
    ("password: Hunter2Hunter2", f"password: {PHRASE}"),
    ("GITHUB_PAT 0a1b2c3d4e5f6a7b8c9d", f"GITHUB_PAT {PHRASE}"),
    ("key a1b2c3d4 and secret e5f6a7b8", f"key {PHRASE} and secret {PHRASE}"),
    ("session key 0198c0de-0000-7000-8000-000000000200", f"session key {PHRASE}"),
]


@pytest.mark.parametrize(("line", "expected"), HITS, ids=[h[0] for h in HITS])
def test_a_phrase_on_stderr_loses_its_value(line: str, expected: str) -> None:
    """The value after a credential name and blanks or a colon is replaced; the record says
    how many."""
    rec = record(line.encode())
    assert rec["text"] == expected
    count = expected.count(PHRASE)
    assert rec["redaction"] == (
        f"{count} credential{'s' if count > 1 else ''} replaced (credential-phrase)"
    )


# The agents' stderr of sample_traces/ (claude-agent-acp, codex-acp, gemini-cli) and phrases
# a credential name starts that hold no secret: each is recorded as it is.
NEAR_MISSES = [
    "claude auth status failed: Command failed: ~/.cache/acp-trace/peers/claude-agent-acp/"
    "node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude auth status --json",
    "[authStatus] session account carries no identity signal; keeping probe",
    "[session/query] sessionId=0198c0de-0000-7000-8000-000000000200 resume=0198c0de-0000-7000-"
    "8000-000000000200 apiType=native baseUrl=native",
    "[session/models] sessionId=0198c0de phase=read-transcript durationMs=405 model=claude-sonnet-4-5",
    "auth change detected",
    "key not found",
    "used tokens 123456789 of 200000",
    "token counting enabled",
    "ssh key ~/.ssh/id_ed25519 loaded",
    "reading key /etc/ssl/private/server2.pem",
    "token --refresh-2fa given",
    "monkey business",
    "the keyabc12345 was",
    "key=",
    "API key <redacted:anthropic-api-key> in use",
]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_stderr_that_holds_no_phrase_value_stays(line: str) -> None:
    """Real agents' stderr and phrases whose value is a word, a number, a path or a flag."""
    rec = record(line.encode())
    assert rec["text"] == line and "redaction" not in rec


def test_phrases_are_read_on_stderr_only() -> None:
    """Stray stdout and the strings of messages keep a phrase (prose and source files have
    many); `--no-redact-content` keeps it on stderr too."""
    line = b"using key 3f9c2a71e0b4d8"
    assert record(line, "agent")["text"] == line.decode()
    msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"t": line.decode()}}
    assert record(json.dumps(msg).encode(), "agent")["msg"] == msg
    kept = record(line, policy=RedactionPolicy(content=False))
    assert kept["text"] == line.decode()


def test_a_cut_line_keeps_no_part_of_a_phrase_value() -> None:
    """A stderr line cut by --max-record-bytes inside a phrase's value keeps no part of it
    (the recorded part ends before the phrase's name, as before a credential's keyword);
    a value that reaches the end of a cut text is replaced whatever it looks like."""
    line = b"x" * 40 + b" using key 3f9c2a71e0b4d8" + b"z" * 100
    rec = record(line, max_bytes=54)
    assert "3f9" not in rec["text"] and rec["truncated"] is True
    assert rec["bytes"] == len(line)
    assert redact_phrases(b"using key 3f9", cut=True)[0] == f"using key {PHRASE}".encode()
    assert redact_phrases(b"using key 3f9")[0] == b"using key 3f9"  # whole: too short


def test_find_phrases_reads_long_blank_runs_in_linear_time() -> None:
    """Names followed by long runs of blanks and no value are read at once, in a process
    whose timeout only guards against a hang."""
    code = (
        "from acp_trace.credentials import redact_phrases\n"
        "line = (b'key' + b' ' * 200_000 + b'!') * 5 + b' token: ab12cd34ef'\n"
        "new, kinds = redact_phrases(line)\n"
        "assert kinds == ['credential-phrase'] and new.endswith(b'token: <redacted:credential-phrase>')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_redact_phrases_says_what_it_replaced() -> None:
    """The kinds list has one entry per value; text without a credential name is returned."""
    assert redact_phrases(b"no names here 3f9c2a71e0b4d8") == (b"no names here 3f9c2a71e0b4d8", [])
    new, kinds = redact_phrases(b"key a1b2c3d4e5 token f6a7b8c9d0")
    assert new == f"key {PHRASE} token {PHRASE}".encode() and len(kinds) == 2
