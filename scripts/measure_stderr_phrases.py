"""Measure the `NAME value` phrase rule (issue 44) on the real agents' recordings: how many
stderr values the recorder's stderr redaction replaces with the phrase rule and without it,
every hit printed for inspection, and (for comparison) what the rule would replace if it ran
on every string of every message, which is why it runs on stderr only.

    python scripts/measure_stderr_phrases.py [TRACE...]

Without arguments it reads the recordings of claude-agent-acp, codex-acp and gemini-cli in
sample_traces/ and the acp-devtools captures of claude-agent-acp in tests/data/imports/.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import orjson

from acp_trace.credentials import PHRASE_KIND, LineState, names_credential, redact_phrases
from acp_trace.credentials.assignment import _PHRASE, _RUN, _looks_secret
from acp_trace.credentials.values import strings
from acp_trace.redaction.free_text import may_hold, redact_text

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("claude-agent-acp-*.jsonl", "codex-acp-*.jsonl", "gemini-cli-*.jsonl")


def recordings() -> list[Path]:
    found = [p for pattern in PEERS for p in sorted((ROOT / "sample_traces").glob(pattern))]
    return found + sorted((ROOT / "tests/data/imports").glob("acp-devtools-*.trace.jsonl"))


def stderr_lines(path: Path) -> list[bytes]:
    lines = []
    for raw in path.read_bytes().splitlines():
        rec = orjson.loads(raw)
        if rec.get("src") == "stderr" and "text" in rec:
            lines.append(rec["text"].encode("utf-8", "surrogatepass"))
        elif rec.get("src") == "stderr" and "b64" in rec:
            lines.append(base64.b64decode(rec["b64"]))
    return lines


def message_strings(path: Path) -> list[bytes]:
    out = []
    for raw in path.read_bytes().splitlines():
        rec = orjson.loads(raw)
        if isinstance(rec.get("msg"), dict | list):
            out += [s.encode("utf-8", "surrogatepass") for s in strings(rec["msg"])]
    return out


def replaced(line: bytes, *, phrases: bool) -> list[str]:
    """The kinds the recorder's stderr redaction replaces in `line` (phrases on or off)."""
    if not may_hold(line, phrases=phrases):
        return []
    return redact_text(line, LineState(), phrases=phrases)[1]


def near_misses(text: bytes) -> list[bytes]:
    """Phrases whose NAME names a credential but whose value does not look like one."""
    found = []
    for run in _RUN.finditer(text):
        name = run.group()
        if len(name) > 128 or not names_credential(name.decode("latin-1")):
            continue
        value = _PHRASE.match(text, run.end())
        if value and value.start(1) > run.end() and not _looks_secret(value.group(1)):
            found.append(text[run.start() : value.end()])
    return found


def main(paths: list[Path]) -> None:
    totals = dict.fromkeys(("lines", "before", "after", "near", "strings", "in_messages"), 0)
    for path in paths:
        lines, texts = stderr_lines(path), message_strings(path)
        before = sum(len(replaced(line, phrases=False)) for line in lines)
        after = sum(len(replaced(line, phrases=True)) for line in lines)
        near = [miss for line in lines for miss in near_misses(line)]
        for line in lines:
            if PHRASE_KIND in replaced(line, phrases=True):
                print(f"  stderr hit: {line[:160]!r}")
        for miss in near:
            print(f"  stderr near miss (kept): {miss!r}")
        in_messages = 0
        for text in texts:
            new, kinds = redact_phrases(text)
            in_messages += len(kinds)
            if kinds:
                print(f"  message hit: {new[:160]!r}")
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(
            f"{name}: {len(lines)} stderr lines, credentials replaced without the phrase rule"
            f" {before}, with it {after}, {len(near)} near misses; {len(texts)} message"
            f" strings, {in_messages} phrase hits had the rule run on them"
        )
        row = (len(lines), before, after, len(near), len(texts), in_messages)
        for key, value in zip(totals, row, strict=True):
            totals[key] += value
    print("total:", totals)


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or recordings())
