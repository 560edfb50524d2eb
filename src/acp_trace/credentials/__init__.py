"""Credentials in free text: well-known formats found anywhere in a string, and only their
span replaced by `<redacted:KIND>` (docs/trace-format.md, "Credentials in free text").

The recorder (record/), the exports and the report (render/) and the mock (mock/) all use it,
so it imports nothing of acp_trace. What it finds:

- gitleaks' rules for provider keys with a fixed shape, JWTs and private keys (`gitleaks.py`,
  vendored from gitleaks' default config, MIT: LICENSE-gitleaks; refreshed by
  scripts/vendor_gitleaks_rules.py): Anthropic, OpenAI, AWS, GitHub, GitLab, Slack, Stripe,
  Google (GCP) API keys;
- our own (`local.py`): `Authorization` values, `Bearer` and `Basic` credentials, the password
  of a URL, `NAME=value` where NAME names a credential (`names_credential`), and a private key
  block cut short (no END line);
- for stderr only (`redact_phrases`, assignment.py): the value in a `NAME value` phrase
  (`using key VALUE`, `token: VALUE`) where NAME names a credential and VALUE looks like one.

Every rule is an RE2 regex (google-re2: linear time, whatever the input), run only on text
where one of its keywords occurs (one Aho-Corasick pass over the lowercased text, as gitleaks
does). Text is handled as bytes (str through UTF-8 with lone surrogates kept: `surrogatepass`).
"""

from __future__ import annotations

from dataclasses import dataclass

import ahocorasick_rs

from acp_trace.credentials.assignment import find_phrases, may_assign
from acp_trace.credentials.local import BLOCK_END, BLOCK_START, Rule, rules
from acp_trace.credentials.names import (
    CREDENTIAL_PARTS,
    CREDENTIAL_WORDS,
    keyword_set,
    may_name_credential,
    name_gate_or,
    names_credential,
)

__all__ = [
    "CREDENTIAL_PARTS",
    "CREDENTIAL_WORDS",
    "QUICK",
    "Finding",
    "LineState",
    "find",
    "first_keyword",
    "keywords",
    "kinds",
    "may_hold",
    "may_name_credential",
    "name_gate_or",
    "names_credential",
    "placeholder",
    "redact_bytes",
    "redact_phrases",
    "redact_str",
    "source",
]

RULES: tuple[Rule, ...] = rules()
_KEYWORDS = sorted({keyword for rule in RULES for keyword in rule.keywords})
_FINDER = ahocorasick_rs.BytesAhoCorasick([k.encode() for k in _KEYWORDS])
_KEYWORD_SET = keyword_set(_KEYWORDS)
_RULES_OF = [
    tuple(i for i, rule in enumerate(RULES) if keyword in rule.keywords) for keyword in _KEYWORDS
]
BLOCK_LINES = 400  # lines of a private key block read as the key when its END line never comes
# The first pass over every recorded line, on its raw bytes: at most 64 case-sensitive needles
# (the aho-corasick crate then searches with SIMD, several GB/s, and no lowercased copy is
# made), one for each rule's keywords as they are spelled in what its regex accepts, the
# words of the case-insensitive rules in lower, Capitalized and UPPER case; a NAME=value
# whose NAME may name a credential is looked for apart (`may_assign`, after a memchr for
# `=`). tests/test_credentials.py checks that it covers every rule.
QUICK = (
    *("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "ABSK", "bedrock-api-key-", "AIza"),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("glpat-", "glrt-", "gldt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-"),
    *("gloas-", "glsoat-", "glffct-", "GR1348941"),
    *("xox", "xapp", "XAPP", "hooks.slack.com", "k_live", "k_test", "k_prod"),
    *("sk-ant-", "T3BlbkFJ", "eyJ", "eyA", "-----BEGIN", "-----begin", "://"),
    *("uthoriz", "UTHORIZ", "earer", "EARER", "asic", "ASIC", "_gitlab_session="),
)
_QUICK = ahocorasick_rs.BytesAhoCorasick(
    [n.encode() for n in QUICK], matchkind=ahocorasick_rs.MatchKind.LeftmostFirst
)


@dataclass(frozen=True)
class Finding:
    """One credential: its byte span in the text and its kind (a rule id)."""

    start: int
    end: int
    kind: str


def placeholder(kind: str) -> bytes:
    """What stands for a credential of `kind` in the recorded text."""
    return b"<redacted:" + kind.encode() + b">"


def keywords() -> list[str]:
    """Every rule's keywords (lowercase): text without any of them holds no credential."""
    return list(_KEYWORDS)


PHRASE_KIND = "credential-phrase"


def kinds() -> list[str]:
    """Every kind this module can find, for the trace header and the docs."""
    return sorted({rule.kind for rule in RULES} | {PHRASE_KIND})


def source() -> dict[str, str]:
    """Where the rules come from, for the trace header."""
    from acp_trace.credentials import gitleaks

    return {"gitleaks": gitleaks.VERSION, "license": "MIT", "url": gitleaks.SOURCE}


def may_hold(data: bytes) -> bool:
    """Whether `data` may hold a credential: a QUICK needle in it, or a `NAME=` whose NAME
    may name one (the cheap first pass; `find` then looks for every rule's keywords in any
    case)."""
    return bool(_QUICK.find_matches_as_indexes(data)) or (b"=" in data and may_assign(data))


def first_keyword(data: bytes) -> int | None:
    """Where the first keyword of any rule starts in `data`, or None."""
    hits = _FINDER.find_matches_as_indexes(data.lower())
    return min(start for _keyword, start, _end in hits) if hits else None


def find(data: bytes) -> list[Finding]:
    """Every credential in `data`, by start, overlapping ones merged (the first kind kept)."""
    present = _KEYWORD_SET.Match(data)  # which keywords occur, in one pass, in any case
    if not present:
        return []
    chosen = sorted({i for keyword in present for i in _RULES_OF[keyword]})
    found: list[Finding] = []
    for index in chosen:
        rule = RULES[index]
        if rule.needs and rule.needs not in data:
            continue
        if rule.finder is not None:
            found += [Finding(start, end, rule.kind) for start, end in rule.finder(data)]
            continue
        for match in rule.regex.finditer(data):
            span = rule.span(match)
            if span is not None:
                found.append(Finding(span[0], span[1], rule.kind))
    return _merge(found)


def _merge(found: list[Finding]) -> list[Finding]:
    merged: list[Finding] = []
    for item in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and item.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Finding(last.start, max(last.end, item.end), last.kind)
        else:
            merged.append(item)
    return merged


def redact_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """`data` with each credential's span replaced by its placeholder; the kinds replaced."""
    found = find(data)
    if not found:
        return data, []
    out, last = [], 0
    for item in found:
        out += [data[last : item.start], placeholder(item.kind)]
        last = item.end
    out.append(data[last:])
    return b"".join(out), [item.kind for item in found]


def redact_phrases(data: bytes, *, cut: bool = False) -> tuple[bytes, list[str]]:
    """`data` with the value of each `NAME value` phrase replaced (assignment.py; stderr
    only); the kinds replaced. `cut`: `data` is the first bytes of a longer line."""
    if not may_name_credential(data):
        return data, []
    spans = find_phrases(data, cut=cut)
    if not spans:
        return data, []
    out, last = [], 0
    for start, end in spans:
        out += [data[last:start], placeholder(PHRASE_KIND)]
        last = end
    out.append(data[last:])
    return b"".join(out), [PHRASE_KIND] * len(spans)


def redact_str(text: str) -> tuple[str, list[str]]:
    """The same for a str (lone surrogates kept as they were)."""
    data = text.encode("utf-8", "surrogatepass")
    if not may_hold(data):
        return text, []
    new, found = redact_bytes(data)
    return (new.decode("utf-8", "surrogatepass"), found) if found else (text, [])


class LineState:
    """A stream read line by line (stderr, stray stdout): a private key's BEGIN line opens a
    block whose following lines are the key until its END line (at most BLOCK_LINES)."""

    def __init__(self) -> None:
        self.open = 0  # lines left in an open block

    def redact(self, line: bytes) -> tuple[bytes, list[str]]:
        """One line with its credentials replaced, a line inside a key block replaced whole."""
        if self.open:
            end = BLOCK_END.search(line)
            if end is None:
                self.open -= 1
                return placeholder("private-key"), ["private-key"]
            self.open = 0
            rest, found = self.redact(line[end.end() :])
            return placeholder("private-key") + rest, ["private-key", *found]
        new, found = redact_bytes(line)
        if "private-key" in found and _opens_block(line):
            self.open = BLOCK_LINES
        return new, found


def _opens_block(line: bytes) -> bool:
    """A BEGIN line of a private key after the last END line in `line`."""
    begins = [m.start() for m in BLOCK_START.finditer(line)]
    ends = [m.start() for m in BLOCK_END.finditer(line)]
    return bool(begins) and (not ends or begins[-1] > ends[-1])
