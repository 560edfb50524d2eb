"""The outputs redact a records table through the tap's own code (redaction/records.py): each
line of text comes out of `scrub_records` as the recorder would have recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_trace import analyze
from acp_trace.redaction.records import scrub_records
from acp_trace.redaction.redactor import Redactor
from test_credentials import GITHUB
from tracebuilder import TraceBuilder

KEY = "sk-ant-api03-" + "Qw8_" * 23 + "xAA"

# (src, line): lines that hold a credential, and lines that hold none
LINES = [
    ("stderr", "using key 3f9c2a71e0b4d8"),
    ("stderr", 'printed {"k":"' + KEY.replace("-", "\\u002d") + '"}'),
    ("agent", "stray " + KEY.replace("-", "\\u002d")),
    ("stderr", f"export GITHUB_TOKEN={GITHUB}"),
    ("agent", f"token {GITHUB} in a log"),
    ("agent", "using key 3f9c2a71e0b4d8"),  # a phrase counts on stderr only
    ("stderr", "claude auth status failed"),
    ("stderr", "nothing here"),
]


def tap_text(src: str, line: str) -> str:
    """The `text` the recorder records for `line`."""
    payload = Redactor().line_payload(line.encode(), src)
    return str(json.loads(b"{" + payload + b"}")["text"])


@pytest.mark.parametrize(("src", "line"), LINES, ids=[f"{s}: {t[:30]}" for s, t in LINES])
def test_a_text_line_comes_out_as_the_tap_records_it(tmp_path: Path, src: str, line: str) -> None:
    """A trace recorded without free-text redaction, redacted by the outputs: its text is
    the text the recorder would have written (escaped spellings, phrases on stderr)."""
    b = TraceBuilder()
    b.text(src, line)
    records = analyze(b.write(tmp_path / "t.jsonl")).records
    rows = scrub_records(records).filter(records["text"] == line)
    assert rows.height == 1
    assert rows["text"][0] == tap_text(src, line)
