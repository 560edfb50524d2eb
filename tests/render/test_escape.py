"""Escaping trace text for a terminal, CSV cells and JSON printed to a terminal."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_trace.render import escape
from acp_trace.render.escape import csv_cell, csv_safe, json_safe, terminal, terminal_lines

ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
KEPT = {"\u200d"}  # the zero width joiner of emoji sequences


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("sess_1", "sess_1"),
        ("\x1b[31mred", "\\x1b[31mred"),  # CSI: colours
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC retitle, BEL
        ("a\x9bb", "a\\x9bb"),  # C1 CSI
        ("\x7f", "\\x7f"),  # DEL
        ("abc\u202edef", "abc\\u202edef"),  # right-to-left override
        ("\u2066x\u2069", "\\u2066x\\u2069"),  # bidi isolates
        ("\ud83d", "\\ud83d"),  # a lone surrogate (a cut emoji)
        ("line\nbreak\rtab\t", "line\\nbreak\\rtab\\t"),
        ("\u2028", "\\u2028"),  # line separator
        ("\U000e0041", "\\U000e0041"),  # a tag character (invisible text)
        ("x\u200by", "x\\u200by"),  # zero width space
        # near misses: printable text of any script stays as it is
        ("日本語 café ñ", "日本語 café ñ"),
        ("👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"),
        ("\\x1b", "\\x1b"),
        ("\u00a0", "\u00a0"),
    ],
)
def test_terminal_escapes_what_a_terminal_acts_on(raw: str, shown: str) -> None:
    """Control, bidi and invisible characters and lone surrogates are shown escaped; the rest stays."""
    assert terminal(raw) == shown


def test_terminal_lines_keeps_newlines_and_tabs() -> None:
    """A block of output keeps its line breaks and tabs, and escapes everything else."""
    assert terminal_lines("a\tb\nc\x1b[2J\rd\u202e\n") == "a\tb\nc\\x1b[2J\\rd\\u202e\n"


def test_the_escaped_class_is_every_control_format_and_separator_character() -> None:
    """Every code point of categories Cc, Cf, Cs, Zl, Zp (but the ZWJ) is escaped; any other
    escaped one is unassigned in this Python's Unicode (format characters of a later version)."""
    missed, extra = [], []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        should = category in ESCAPED_CATEGORIES and char not in KEPT
        escaped = terminal(char) != char
        if should and not escaped:
            missed.append(f"U+{code:04X} {category}")
        elif escaped and not should and category != "Cn":
            extra.append(f"U+{code:04X} {category}")
    assert (missed, extra) == ([], [])


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        # near misses: numbers with a sign are numbers; other text is left alone
        ("-12.5", "-12.5"),
        ("+3", "+3"),
        ("-1e-3", "-1e-3"),
        ("-.5", "-.5"),
        ("", ""),
        ("a=b", "a=b"),
        ("sess-1", "sess-1"),
        ("-", "'-"),
        ("- 3", "'- 3"),
        ("-٣", "'-٣"),  # a non-ASCII digit is no number to a spreadsheet
    ],
)
def test_csv_cell_neutralizes_formulas_not_numbers(raw: str, written: str) -> None:
    """A cell that starts like a formula gets a leading quote; a signed number does not."""
    assert csv_cell(raw) == written


def test_csv_safe_treats_text_columns_like_csv_cell() -> None:
    """csv_safe applies csv_cell to text and categorical columns and leaves numbers and nulls."""
    raw = ["=1+2", "-3", "ok", None, "@x", "-a"]
    df = pl.DataFrame(
        {
            "text": raw,
            "cat": pl.Series(raw, dtype=pl.Categorical),
            "number": [-1.5, -2.0, 3.0, None, 4.0, 5.0],
        }
    )
    safe = csv_safe(df)
    expected = [None if v is None else csv_cell(v) for v in raw]
    assert safe["text"].to_list() == expected
    assert safe["cat"].to_list() == expected
    assert safe["number"].to_list() == df["number"].to_list()


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ('{"a": "\x7f"}', '{"a": "\\u007f"}'),  # DEL is ASCII and still escaped
        ('{"a": "x\x7f"}', '{"a": "x\\u007f"}'),
        ('{"a": "\x9b"}', '{"a": "\\u009b"}'),  # C1, just beyond ASCII
        # near misses: ASCII without DEL, and printable text beyond ASCII, stay as they are
        ('{"a": "~ plain"}', '{"a": "~ plain"}'),
        ('{"a": "\u00a0é"}', '{"a": "\u00a0é"}'),
        ("", ""),
    ],
)
def test_json_safe_treats_ascii_like_any_text(text: str, safe: str) -> None:
    """The ASCII fast path escapes DEL as the full pass does, and keeps the rest unchanged."""
    assert json_safe(text) == safe


def test_json_safe_escapes_without_changing_the_value() -> None:
    """C1, bidi and tag characters become JSON escapes; the decoded value is the same."""
    value = {"session": "a\u202eb\x85c\U000e0041d", "plain": "日本 👍"}
    text = json.dumps(value, ensure_ascii=False)
    safe = json_safe(text)
    assert "\u202e" not in safe and "\x85" not in safe and "\U000e0041" not in safe
    assert "\\u202e" in safe and "\\udb40\\udc41" in safe
    assert "日本 👍" in safe
    assert json.loads(safe) == value


SPECIAL = (
    "\x00\x1b\t\n\r\x7f\x85\x9b\u00a0\u00ad\u200b\u200d\u202e\u2028\ud83d\udc4d\ufeff\U000e0041é👍"
)


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from(SPECIAL) | st.characters(), max_size=40),
    st.integers(min_value=0, max_value=2),
)
def test_long_texts_are_escaped_as_the_regex_alone_escapes_them(tail: str, where: int) -> None:
    """A text longer than LONG_TEXT (searched in its suspects first) comes out as the class's
    own substitution makes it, for every escaping function."""
    pad = "x" * (escape.LONG_TEXT + 1)
    text = (tail + pad, pad + tail, pad[:2000] + tail + pad[2000:])[where]
    assert terminal(text) == escape._UNSAFE.sub(escape._escaped, text)
    assert terminal_lines(text) == escape._UNSAFE_IN_BLOCK.sub(escape._escaped, text)
    assert json_safe(text) == escape._UNSAFE_IN_JSON.sub(escape._json_escape, text)


PLAIN_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("+-1.eE0x"), max_size=12))
def test_the_number_pattern_takes_what_the_ambiguous_one_took(text: str) -> None:
    """The unambiguous number pattern matches exactly the texts the plain one matched."""
    assert bool(escape._NUMBER.match(text)) == bool(PLAIN_NUMBER.match(text))


def test_a_long_run_of_digits_is_checked_in_linear_time() -> None:
    """`-`, 200,000 digits and a letter are found a formula cell at once, in a process whose
    timeout only guards against a hang."""
    # the ambiguous pattern tried every split of the digits: 12.5 s for 20,000
    code = (
        "from acp_trace.render.escape import csv_cell\n"
        "cell = '-' + '1' * 200_000 + 'x'\n"
        'assert csv_cell(cell) == "\'" + cell\n'
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
