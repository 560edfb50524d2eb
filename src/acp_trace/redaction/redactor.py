"""Redaction of secrets in the recorded copy of a line (docs/trace-format.md, "Redaction").

The recorder never changes the bytes it forwards. Its writer asks `Redactor.line_payload`
for the payload of each recorded line, which never fails open:

1. A byte prefilter (one Aho-Corasick pass, `_NEEDLES`) looks for what a policy secret
   needs in a JSON-RPC message: a key that holds secrets (`"mcpServers"`, `"env"`, `"args"`,
   `"headers"`, `"url"`, `"baseUrl"`, `"authMethods"`, `"_meta"`), an auth method name, a
   `\\u` escape that could spell one of them, and on client lines `"action"` (a form answer).
2. A JSON-RPC message without any of them is spliced as sent (after settling request
   pairing), unless it answers a pending `elicitation/create`.
3. Otherwise the exact path parses the line strictly (UTF-8, no NaN, no trailing bytes, no
   duplicate key, numbers exact) and applies the rules (redact_rules.py). A line it cannot
   parse, or that is not a JSON-RPC message, becomes a placeholder:
   `"redaction":"<why>","text":"<redacted: N bytes>","bytes":N`.
4. A line that is no message (stray stdout, a line of a pretty-printed message) stays text
   unless it names a redacted method or `fragment_may_hold_secret` says it may hold one.
5. A line longer than --max-record-bytes is judged by its first bytes (the rest is never
   recorded); one that may hold a secret there becomes a placeholder.

Credentials in free text (free_text.py, acp_trace.credentials): unless the policy's
`content` is off (`--no-redact-content`), a message whose bytes have a rule's keyword (or a
`\\u` escape) and whose strings hold a credential goes down the exact path too, where each
such span becomes `<redacted:KIND>` and its path is listed; a line of text (stray stdout,
stderr) has the same spans replaced and says how many (`redaction`).

`stderr` lines are text: credentials replaced (and the value of a `NAME value` phrase such as
`using key VALUE`: free_text.py), then the `--redact-stderr` patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs
import orjson

from acp_trace.credentials import LineState
from acp_trace.errors import RecordError
from acp_trace.jsonrpc import loads
from acp_trace.redaction import free_text
from acp_trace.redaction.policy import policy_header
from acp_trace.redaction.rules import (
    ANSWERED_BY_FORM,
    Pending,
    id_key,
    is_message,
    redact_message,
    track,
)
from acp_trace.redaction.secrets import (
    REDACTED,
    fragment_may_hold_secret,
    may_scrub_raw,
    scrub_words,
)
from acp_trace.redaction.strict_json import (
    NotStrict,
    dumps,
    strict_loads,
    top_level_scalars,
    writes_back,
)
from acp_trace.trace.format import encode_payload, encode_text

__all__ = ["REDACTED", "RedactionPolicy", "Redactor", "line_payload", "redact_command"]


@dataclass(frozen=True)
class RedactionPolicy:
    """What the recorder redacts: the ACP secrets policy (`enabled`), credentials in free text
    (`content`, only with `enabled`), and stderr patterns."""

    enabled: bool = True
    stderr_patterns: tuple[str, ...] = ()
    content: bool = True

    def header(self) -> dict[str, Any]:
        """The trace header's `redaction` value."""
        return policy_header(self.enabled, len(self.stderr_patterns), content=self.content)


POLICY = RedactionPolicy().header()
NO_POLICY = RedactionPolicy(enabled=False).header()

_ESCAPE = "a \\u escape"
# needle -> what the note says. Every needle starts with a quote, so the search skips
# through string contents (JSON strings hold no bare quote); message needles send a
# JSON-RPC line down the exact path, the others count only in lines that are no message.
_MESSAGE_NEEDLES = {
    f'"{key}"'.encode(): key
    for key in ("mcpServers", "authMethods", "env", "args", "headers", "baseUrl", "url", "_meta")
} | {b'"authenticate"': "authenticate", b'"auth/': "auth/", b'"auth\\/': "auth/"}
_CLIENT_NEEDLES = {b'"action"': "action"}
_METHOD_NAMES = (
    *("session/new", "session/load", "session/resume", "session/fork"),
    *("providers/set", "terminal/create", "elicitation/create"),
)
_NAME_NEEDLES = {
    f'"{spelled}"'.encode(): name
    for name in _METHOD_NAMES
    for spelled in (name, name.replace("/", "\\/"))
}
_NEEDLES = list((_MESSAGE_NEEDLES | _CLIENT_NEEDLES | _NAME_NEEDLES).items())
_FINDER = ahocorasick_rs.BytesAhoCorasick([needle for needle, _ in _NEEDLES])
_NAMES = [name for _, name in _NEEDLES]
_MESSAGE_NAMES = frozenset(_MESSAGE_NEEDLES.values()) | {"action", _ESCAPE}
_CLIENT_ONLY = frozenset(i for i, (needle, _) in enumerate(_NEEDLES) if needle in _CLIENT_NEEDLES)
# A `\u00XX` escape can spell any needle's letters, `_` or `/` (0x2f, 0x41-0x7a): the lines
# that have one go down the exact path. `\u00` is found fast; the regex confirms.
_ESCAPES = ahocorasick_rs.BytesAhoCorasick([b"\\u00"])
_SPELLING = re.compile(rb"\\u00(?:2[fF]|[4-7])")
_NOT_JSON = object()
_NO_HITS: frozenset[str] = frozenset()
# Keys a duplicate of which is named in the placeholder's note (what the note may say).
_KNOWN_KEYS = frozenset({"jsonrpc", "id", "method", "params", "result", "error", *_MESSAGE_NAMES})


class Redactor:
    """The redaction of one recording: the policy plus the request pairing per sender."""

    def __init__(self, policy: RedactionPolicy | None = None) -> None:
        self.policy = policy or RedactionPolicy()
        self._stderr = [_compile(pattern) for pattern in self.policy.stderr_patterns]
        self.pending = {"client": Pending(), "agent": Pending()}
        self.content = self.policy.enabled and self.policy.content
        self._lines = {src: LineState() for src in ("client", "agent", "stderr")}

    def line_payload(
        self, line: bytes, src: str, max_bytes: int | None = None, size: int | None = None
    ) -> bytes:
        """The payload of a recorded line (what follows `"src":"...",` in the record). `size`
        is the line's real length when `line` holds only its first bytes (a cut line)."""
        size = len(line) if size is None else size
        if src == "stderr":
            return self._stderr_payload(line, max_bytes, size)
        if not self.policy.enabled:
            return encode_payload(line, max_bytes, size)
        cut = max_bytes is not None and size > max_bytes
        try:
            if cut:
                return self._cut(line, src, max_bytes or 0, size)
            return self._whole(line, src)
        except RecursionError:  # a deep structure in a rule: never let the text through
            return placeholder(size, "nested too deeply to redact", cut=cut)

    def _whole(self, line: bytes, src: str) -> bytes:
        hits = self._hits(line, src)
        stripped = line.strip(b" \t\r")
        content = self.content and free_text.may_hold(line)
        value: Any = _UNREAD
        if hits == _META_ONLY:
            value = _fast_loads(stripped)
            if _inert_meta(value, line, stripped):
                hits = _NO_HITS
        if hits & _MESSAGE_NAMES:
            return self._exact(line, stripped, src, hits, content=content)
        if value is _UNREAD:
            value = _fast_loads(stripped)
        if content and value is _NOT_JSON and _escaped_json(stripped):
            return self._exact(line, stripped, src, hits, content=True)
        if content and _is_rpc(value) and (changes := free_text.redactions(value)):
            return self._exact(line, stripped, src, hits, content=True, changes=changes)
        if _is_notification(value):
            return b'"msg":' + stripped  # a notification: the common case, nothing to pair
        if _is_rpc(value):
            if self._answers_form(value, src):
                return self._exact(line, stripped, src, hits)
            for msg in value if isinstance(value, list) else [value]:
                track(msg, src, self.pending)
            return b'"msg":' + stripped
        reason = _describe(hits) if hits else _fragment_reason(line)
        if reason:
            return placeholder(len(line), f"not a JSON-RPC message, and {reason}")
        if value is not _NOT_JSON:
            if content and free_text.in_value(value):
                return self._json_text(stripped, value)
            return b'"msg":' + stripped
        return self._text(line, src) if content or self._lines[src].open else encode_text(line)

    def _text(self, line: bytes, src: str, *, have_all: bool = True) -> bytes:
        """A line of text with its credentials replaced, and a note saying how many."""
        new, kinds = free_text.redact_text(line, self._lines[src], have_all=have_all)
        if not kinds:
            return encode_text(new)
        return b'"redaction":' + orjson.dumps(free_text.note(kinds)) + b"," + encode_text(new)

    def _json_text(self, stripped: bytes, value: Any) -> bytes:
        """A JSON value that is no message, with credentials in its strings: re-encoded."""
        try:
            paths = free_text.redact_value(value, "$")
            body = dumps(value)
        except (TypeError, ValueError) as exc:
            note = f"not a JSON-RPC message, it holds a credential, and {exc}"
            return placeholder(len(stripped), note)
        return b'"redacted":' + orjson.dumps(paths) + b',"msg":' + body

    def _exact(
        self,
        line: bytes,
        stripped: bytes,
        src: str,
        hits: frozenset[str],
        *,
        content: bool = False,
        changes: free_text.Redactions | None = None,
    ) -> bytes:
        """The exact path: a strict parse, the policy's rules, then credentials in the text
        (`changes`: what `redactions` found in the same message, if the caller has it)."""
        if hits:
            why = _describe(hits)
        elif content:
            why = "it may hold a credential"
        else:
            why = "it may answer a form (elicitation/create)"
        try:
            value = strict_loads(stripped, _KNOWN_KEYS)
        except NotStrict as exc:
            return placeholder(len(line), f"{exc}, and {why}")
        if not _is_rpc(value):
            return placeholder(len(line), f"not a JSON-RPC message, and {why}")
        meta = "_meta" in hits or _ESCAPE in hits
        paths: list[str] = []
        for where, msg in _messages(value):
            paths += redact_message(msg, where, src, self.pending, meta=meta)
        if content:
            if paths:  # the rules changed strings: read them again
                changes = None
            try:
                found = free_text.redact_value(value, "$", changes)
                paths = list(dict.fromkeys(paths + found))
            except ValueError as exc:
                return placeholder(len(line), f"{exc}, and {why}")
        if not paths:
            return b'"msg":' + stripped
        try:
            body = dumps(value)
        except (TypeError, ValueError) as exc:
            return placeholder(len(line), f"cannot be written back as JSON ({exc}), and {why}")
        return b'"redacted":' + orjson.dumps(paths) + b',"msg":' + body

    def _cut(self, line: bytes, src: str, max_bytes: int, size: int) -> bytes:
        """A line longer than the record limit: only its first `max_bytes` are recorded."""
        prefix = line[:max_bytes]
        hits = self._hits(prefix, src)
        head = prefix.lstrip(b" \t\r")
        if hits:
            reason: str | None = _describe(hits)
        elif head[:1] == b"{":
            reason = self._cut_object(head, src)
        elif head[:1] == b"[":
            reason = "it is a batch, whose messages cannot be told apart"
        else:
            reason = _fragment_reason(prefix)
        if reason:
            return placeholder(size, f"cut by --max-record-bytes, and {reason}", cut=True)
        if self.content and free_text.may_hold(prefix):
            text = self._text(prefix, src, have_all=False)
            return text + b',"truncated":true,"bytes":%d' % size
        return encode_payload(line, max_bytes, size)

    def _cut_object(self, head: bytes, src: str) -> str | None:
        """Why the first bytes of a cut message may hold a secret, from its first members."""
        fields = top_level_scalars(head)
        method = fields.get("method")
        if isinstance(method, str):
            track(
                {"method": method, **({"id": fields["id"]} if "id" in fields else {})},
                src,
                self.pending,
            )
            return None  # its secrets sit under keys the prefilter looks for
        if "id" not in fields:
            return "its method and id come after its first bytes"
        answered = track({"id": fields["id"]}, src, self.pending)
        if src == "agent" or answered not in (None, ANSWERED_BY_FORM):
            return None  # only a client response can hold answers under any key
        return "it may answer a form (elicitation/create)"

    def _hits(self, data: bytes, src: str) -> frozenset[str]:
        found = _FINDER.find_matches_as_indexes(data)
        escaped = (
            b"\\" in data  # memchr: most short lines have no backslash at all
            and bool(_ESCAPES.find_matches_as_indexes(data))
            and _SPELLING.search(data) is not None
        )
        if not found and not escaped:
            return _NO_HITS
        names = {_NAMES[i] for i, _start, _end in found if src == "client" or i not in _CLIENT_ONLY}
        return frozenset(names | {_ESCAPE} if escaped else names)

    def _answers_form(self, value: Any, src: str) -> bool:
        waiting = self.pending["agent" if src == "client" else "client"]
        if not len(waiting):
            return False
        msgs = value if isinstance(value, list) else [value]
        return any(
            "method" not in msg and waiting.waits_for(id_key(msg.get("id")), ANSWERED_BY_FORM)
            for msg in msgs
        )

    def _stderr_payload(self, line: bytes, max_bytes: int | None, original: int) -> bytes:
        notes, kinds = [], list[str]()
        if self.content and free_text.may_hold(line, phrases=True):
            have_all = len(line) >= original
            line, kinds = free_text.redact_text(
                line, self._lines["stderr"], have_all=have_all, phrases=True
            )
        elif self.content and self._lines["stderr"].open:
            line, kinds = self._lines["stderr"].redact(line)  # inside a private key block
        if kinds:
            notes.append(free_text.note(kinds))
        count = 0
        for pattern in self._stderr:
            line, found = pattern.subn(REDACTED.encode(), line)
            count += found
        payload = _text_payload(line, max_bytes, original)
        if count:
            notes.append(f"{count} match{'es' if count > 1 else ''} of --redact-stderr replaced")
        if not notes:
            return payload
        return b'"redaction":' + orjson.dumps("; ".join(notes)) + b"," + payload


_SHARED = {True: Redactor(), False: Redactor(RedactionPolicy(enabled=False))}


def line_payload(
    line: bytes,
    src: str,
    *,
    redact: bool | Redactor,
    max_bytes: int | None,
    size: int | None = None,
) -> bytes:
    """The payload of a recorded line. `redact` is the recording's Redactor (it pairs
    requests and responses across lines), or a bool for a process-wide one; `size` is the
    line's real length when `line` holds only its first bytes."""
    redactor = redact if isinstance(redact, Redactor) else _SHARED[bool(redact)]
    return redactor.line_payload(line, src, max_bytes, size)


def redact_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """The agent's argv for the trace header with credentials replaced (`--api-key X`,
    `--token=X`, `API_KEY=x`, `-H "Authorization: X"`, URL credentials), and their paths."""
    scrubbed = [str(word) for word in scrub_words(list(argv))]
    paths = [
        f"$.command[{i}]" for i, (a, b) in enumerate(zip(argv, scrubbed, strict=True)) if a != b
    ]
    return scrubbed, paths


def placeholder(size: int, note: str, *, cut: bool = False) -> bytes:
    """The payload that stands for a line not recorded: its byte count and why."""
    text = f"<redacted: {size} bytes>"
    payload = b'"redaction":' + orjson.dumps(note) + b',"text":' + orjson.dumps(text)
    return payload + (b',"truncated":true' if cut else b"") + b',"bytes":%d' % size


def _compile(pattern: str) -> re.Pattern[bytes]:
    try:
        compiled = re.compile(pattern.encode())
    except re.error as exc:
        raise RecordError(
            f"--redact-stderr {pattern!r}: not a regular expression ({exc})"
        ) from None
    if compiled.fullmatch(b""):
        raise RecordError(f"--redact-stderr {pattern!r}: matches the empty string")
    return compiled


_META_ONLY = frozenset({"_meta"})
_UNREAD = object()  # the line not parsed yet (None is JSON's null)


def _is_notification(value: Any) -> bool:
    return isinstance(value, dict) and "id" not in value and isinstance(value.get("method"), str)


def _inert_meta(value: Any, line: bytes, stripped: bytes) -> bool:
    """Whether the `_meta` objects of a notification whose only needle is `"_meta"` are
    certain to pass the rules unchanged, so the exact path can be skipped (an agent such as
    claude-agent-acp puts `_meta` on every tool call; issue 34): it is compact JSON that
    orjson writes back byte for byte (what the strict parse accepts, strict_json.py), and
    no text of it can be changed (`may_scrub_raw`: no credential name, URL or `-h`/`-u`
    flag anywhere in the line; `env`, `headers` and `args` keys are needles of their own)."""
    if not _is_notification(value):
        return False
    return not may_scrub_raw(line) and writes_back(value, stripped)


def _escaped_json(stripped: bytes) -> bool:
    """A line orjson refused that may still be JSON whose escapes spell a credential."""
    return stripped[:1] in (b"{", b"[") and b"\\u" in stripped


def _fast_loads(stripped: bytes) -> Any:
    if not stripped:
        return _NOT_JSON
    try:
        return loads(stripped)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _is_rpc(value: Any) -> bool:
    """One JSON-RPC message, or a batch of them."""
    if isinstance(value, list):
        return bool(value) and all(is_message(item) for item in value)
    return is_message(value)


def _messages(value: Any) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(value, list):
        return [(f"$[{index}]", msg) for index, msg in enumerate(value)]
    return [("$", value)]


def _describe(hits: frozenset[str]) -> str:
    names = sorted(hits - {_ESCAPE})
    parts = [f"it names {', '.join(names)}"] if names else []
    if _ESCAPE in hits:
        parts.append("it has a \\u escape that may spell one")
    return " and ".join(parts)


def _fragment_reason(data: bytes) -> str | None:
    return fragment_may_hold_secret(data.decode("utf-8", errors="replace"))


def _text_payload(line: bytes, max_bytes: int | None, original: int) -> bytes:
    if max_bytes is None or (len(line) <= max_bytes and original <= max_bytes):
        return encode_text(line)
    if len(line) <= max_bytes:  # cut, then shortened by the redaction
        return encode_text(line) + b',"truncated":true,"bytes":%d' % original
    payload = encode_payload(line, max_bytes)  # a cut line is always text or b64
    return payload.rsplit(b',"bytes":', 1)[0] + b',"bytes":%d' % original
