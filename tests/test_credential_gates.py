"""The gates that let the recorder skip text (issue 34) never skip what the full rules find:
`NAME_GATE` and `ASSIGN_GATE` accept every name `names_credential` accepts, `scrub_text` with
its gate equals the word-by-word scrub it replaced, and `find_assignments` finds every value
the old `NAME=value` regex found (and only values of credential names)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_trace.credentials import may_hold, names_credential
from acp_trace.credentials.assignment import ASSIGN_GATE, find_assignments
from acp_trace.credentials.names import NAME_GATE, may_name_credential
from acp_trace.redaction import secrets
from acp_trace.redaction.secrets import scrub_text, scrub_words

PIECES = (
    "token",
    "Token",
    "TOKEN",
    "to_ken",
    "to-k.en",
    "t'ok'en",
    "pass_word",
    "PASSW",
    "secret",
    "cookie",
    "credential",
    "authoriz",
    "oauth",
    "bearer",
    "signature",
    "api_Key",
    "apikey",
    "key",
    "Key",
    "KEY",
    "k_ey",
    "monkey",
    "keyboard",
    "KEYBOARD",
    "keyId",
    "pat",
    "Pat",
    "PAT",
    "path",
    "compat",
    "pwd",
    "pin",
    "ping",
    "otp",
    "jwt",
    "sig",
    "design",
    "auth",
    "author",
    "AUTH",
    "x",
    "1",
    "_",
    ".",
    "-",
    "é",
    "日本",
    "'",
    '"',
    "a",
    "B",
    "9",
)
SEPARATORS = (" ", "=", ":", "\t", "\n", ",", ";", "/", "?", "&", "@", "-", "--", "'", '"', "")
EXTRAS = (
    "https://",
    "://",
    "u:p@",
    "-H",
    "--header",
    "-u",
    "--user",
    "-h",
    "Authorization:",
    "Bearer",
    "basic",
    "export ",
    "\\u0041",
    "\u00a0",
    "\u2003",
    "--token",
    "-t",
)

name = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)
text = st.lists(
    st.one_of(st.sampled_from(PIECES), st.sampled_from(SEPARATORS), st.sampled_from(EXTRAS)),
    max_size=40,
).map("".join)
FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(name)
def test_name_gate_accepts_every_credential_name(candidate: str) -> None:
    if names_credential(candidate):
        assert may_name_credential(candidate.encode("utf-8", "surrogatepass")), candidate


_RULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}\Z")


@FAST
@given(name)
def test_assign_gate_finds_every_credential_assignment(candidate: str) -> None:
    if _RULE_NAME.match(candidate) and names_credential(candidate):
        data = f"export {candidate}=hunter2".encode()
        assert ASSIGN_GATE.search(data), candidate
        assert may_hold(data), candidate
        assert find_assignments(data), candidate


def _scrub_text_word_by_word(value: str, depth: int = 0) -> str:
    """scrub_text as it was before its gate: every shell word through scrub_words."""
    spans = secrets._shell_spans(value)
    words = [secrets._unquote(value[start:end]) for start, end in spans]
    scrubbed = scrub_words(list(words), depth)
    if scrubbed == words:
        return value
    out, last = [], 0
    for (start, end), word, new in zip(spans, words, scrubbed, strict=True):
        out.append(value[last:start])
        original = value[start:end]
        out.append(original if new == word else secrets._requote(original, str(new)))
        last = end
    out.append(value[last:])
    return "".join(out)


@FAST
@given(text)
def test_scrub_text_equals_the_word_by_word_scrub(value: str) -> None:
    assert scrub_text(value) == _scrub_text_word_by_word(value)


@pytest.mark.parametrize(
    "value",
    [
        "curl -H 'Authorization: Bearer abc123xyz' https://x.test",
        "run --api-key=hunter2 --verbose",
        "git clone https://user:hunter2@host.test/r.git",
        "TO_KEN=hunter2 make",
        "'-'H 'X-Api: v'",
        "a path=/tmp key=value pat=x",
        "sorted(items, key=lambda item: item.name)",
        "ordinary prose with no secret at all, just words and = signs",
    ],
)
def test_scrub_text_examples(value: str) -> None:
    assert scrub_text(value) == _scrub_text_word_by_word(value)


_OLD_ASSIGNMENT = re.compile(
    rb"(?:^|[^A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_.\-]{0,127})="
    rb"(\"[^\"\n]*\"|'[^'\n]*'|[^\t\n\f\r \"'`;&|<>]+)"
)


def _old_assignments(data: bytes) -> list[tuple[int, int]]:
    """The rule as one regex over every NAME= (its leftmost-first, non-overlapping matches)."""
    spans = []
    for match in _OLD_ASSIGNMENT.finditer(data):
        if not names_credential(match.group(1).decode("latin-1")):
            continue
        start, end = match.span(2)
        if data[start] in b"\"'" and end - start > 1 and data[end - 1] == data[start]:
            start, end = start + 1, end - 1
        if end > start and not data.startswith(b"<redacted", start):
            spans.append((start, end))
    return spans


@FAST
@given(text)
def test_find_assignments_finds_what_the_regex_found(value: str) -> None:
    data = value.encode("utf-8", "surrogatepass")
    new = find_assignments(data)
    assert set(_old_assignments(data)) <= set(new)
    for start, _end in new:  # each is the value of a credential name's `=`
        equals = start - 1 if data[start - 1 : start] == b"=" else start - 2  # a quote
        head = re.search(rb"[A-Za-z0-9_.\-]*\Z", data[:equals])
        assert head is not None and names_credential(head.group().decode("latin-1"))


def test_a_source_file_passes_no_gate() -> None:
    """The point of the gates: ordinary code skips the slow paths."""
    code = b"def frame(self, offset: int = 0) -> bool:\n    result = self.reader.read(offset)\n"
    assert not may_hold(code)
    assert not NAME_GATE.search(code)
    assert scrub_text(code.decode()) == code.decode()


KEY_PIECES = (*PIECES, " ", "\t", "\n", "\f", "\\", '"', "/", "://", "-h", "env", "é")
key = st.lists(st.sampled_from(KEY_PIECES), min_size=1, max_size=5).map("".join)
meta = st.recursive(
    st.one_of(text, st.integers(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(key, inner, max_size=3)),
    max_leaves=8,
)


@FAST
@given(st.dictionaries(key, meta, min_size=1, max_size=4))
def test_a_meta_the_fast_path_skips_is_one_the_rules_leave_alone(value: dict) -> None:
    """The recorder skips the exact path for a notification whose only needle is `_meta`
    when `_inert_meta` says so: then redacting it exactly changes nothing, and the payload
    is the one the exact path gives."""
    from acp_trace.redaction import redactor
    from acp_trace.redaction.redactor import RedactionPolicy, Redactor

    message = {"jsonrpc": "2.0", "method": "session/update", "params": {"_meta": value}}
    line = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )
    fast = Redactor(RedactionPolicy(content=False)).line_payload(line, "agent")
    original = redactor._inert_meta
    try:
        redactor._inert_meta = lambda *_args: False  # type: ignore[assignment]
        exact = Redactor(RedactionPolicy(content=False)).line_payload(line, "agent")
    finally:
        redactor._inert_meta = original  # type: ignore[assignment]
    assert fast == exact, line
