"""Tests of the URL scrubbing in redaction/secrets.py: the leftmost scheme letter on, in linear time."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_trace.redaction import secrets

# The plain form of the pattern (quadratic on a long run of scheme characters without `://`):
# the reference the linear one must equal.
PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("aZ1.-+:/ x'\"<>`@"), max_size=24))
def test_the_linear_url_pattern_finds_what_the_plain_one_finds(text: str) -> None:
    """Every URL the plain pattern finds, the linear one finds at the same place, whole."""
    plain = PLAIN_URL.sub(lambda m: f"<{m.group()}>", text)
    linear = secrets._URL.sub(
        lambda m: m.group()[: m.start(1) - m.start()] + f"<{m.group(1)}>", text
    )
    assert linear == plain


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("1http://user:pw@host/x y", "1http://user:<redacted>@host/x y"),  # a digit before
        ("go --url=ab1.c-d+http://u:p@h", "go --url=ab1.c-d+http://u:<redacted>@h"),
        ("x!b://u:p@h", "x!b://u:<redacted>@h"),
        # near misses: no credential, or no scheme letter, or no `://`
        ("https://host/path", "https://host/path"),
        ("123://u:p@h", "123://u:p@h"),
        ("http:/u:p@h", "http:/u:p@h"),
    ],
)
def test_urls_lose_their_password_wherever_their_scheme_starts(text: str, scrubbed: str) -> None:
    """A URL's password is redacted whether its scheme follows a space, a digit or a sign."""
    assert secrets.scrub_text(text) == scrubbed


def test_a_long_run_without_a_url_is_read_in_linear_time() -> None:
    """A run of scheme characters with a URL only after it (a 60 KB stderr line, a 1 MB
    argument) is scrubbed at once, in a process whose timeout only guards against a hang."""
    # the plain pattern read the run again from every character: 4 to 7 s for the line,
    # about half an hour for the argument
    code = (
        "from acp_trace.redaction import secrets\n"
        "line = 'a1' * 30000 + '!b://u:p@h'\n"
        "assert secrets.fragment_may_hold_secret(line) == 'it has a credential flag, header or URL'\n"
        "word = 'x' * 1_000_000 + '!b://u:p@h'\n"
        "assert secrets.scrub_words(['agent', word])[1].endswith('!b://u:<redacted>@h')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(" \t\"\\'ab="), max_size=24))
def test_shell_words_are_the_spans_of_the_plain_pattern(text: str) -> None:
    """The words of a line are those `finditer` gives (quotes open, closed, escaped)."""
    assert secrets._shell_spans(text) == [m.span() for m in secrets._SHELL_WORD.finditer(text)]


def test_a_quote_left_open_is_read_in_linear_time() -> None:
    """600 KB of `\\"` after a flag (a quote left open, every later `"` escaped) is read at
    once and the flag still redacted, in a process whose timeout only guards against a hang."""
    # trying each `"` as a quote again took 71 s for 60 KB
    code = (
        "from acp_trace.redaction import secrets\n"
        "line = '--token=x ' + '\\\\\"' * 300_000\n"
        "assert secrets.scrub_text(line).startswith('--token=<redacted> ')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
