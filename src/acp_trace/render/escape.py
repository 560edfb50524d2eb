"""Escaping trace text for where it is shown: a terminal, CSV cells, JSON printed to a terminal.

Text from a trace (session ids, agent names, methods, stderr lines, error messages that quote
them) is untrusted: an ESC or OSC sequence can retitle or clear a terminal, U+202E can reverse
what a line seems to say, a cell starting with `=` is a formula in a spreadsheet. Every text
renderer passes trace text through here:

- `terminal(text)`: one value on a line of terminal output. Control characters (C0 with
  newline and tab, DEL, C1), invisible format characters (bidi controls such as U+202E, zero
  width spaces, tag characters; the zero width joiner of emoji sequences is kept), line and
  paragraph separators and lone surrogates become visible Python-style escapes: `\\x1b`,
  `\\u202e`, `\\ud83d`, `\\n`. Everything printable, any script or emoji, is kept.
- `terminal_lines(text)`: a whole block of output the tool built: the same, but newlines and
  tabs stay (the last line of defence before a text is written to a terminal).
- `csv_cell(text)` / `csv_safe(df)`: a cell that starts with `=`, `+`, `-`, `@`, a tab or a
  carriage return gets a leading `'` so a spreadsheet shows it as text, not a formula; a cell
  that is a plain number (`-12.5`, `+3`, `1e-3`) is left alone, and numeric columns are
  numbers, never touched.
- `json_safe(text)`: JSON text whose strings may hold C1, bidi or other invisible characters
  (orjson escapes only C0): those become `\\uXXXX` escapes, which is the same JSON value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

# What is escaped: the Unicode general categories Cc, Cf (but U+200D), Cs, Zl and Zp, as of
# Unicode 15.1 (the tests check the class against the running Python's unicodedata).
_C0 = "\x00-\x1f"
_BEYOND_C0 = (
    "\x7f-\x9f"  # Cc: DEL, C1
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200c\u200e\u200f"  # zero width space and non-joiner, LRM, RLM (U+200D is kept)
    "\u2028\u2029"  # Zl, Zp
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f"  # bidi embeddings, overrides, isolates; invisibles
    "\ud800-\udfff"  # Cs: lone surrogates (what JSON.stringify writes for a cut emoji)
    "\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"  # tag characters
)
_UNSAFE = re.compile(f"[{_C0}{_BEYOND_C0}]")
_UNSAFE_IN_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f{_BEYOND_C0}]")  # tab and newline stay
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


LONG_TEXT = 4096  # longer texts are searched through `_suspects` first
_PRINTABLE = bytes(range(0x20, 0x7F))  # ASCII no escaping class holds
_PRINTABLE_BLOCK = _PRINTABLE + b"\t\n"
_BELOW_DEL = bytes(range(0x7F))  # JSON: C0 is escaped by the encoder already


def _suspects(text: str, kept: bytes) -> str:
    """The characters of `text` other than the ASCII ones in `kept`, in order: all that an
    escaping class can match. A C loop over the UTF-8 bytes (a character beyond ASCII is all
    bytes >= 0x80, so what is left still decodes); the regex then reads only that rest, where
    on the whole text it takes about 10 ns a character."""
    data = text.encode("utf-8", "surrogatepass").translate(None, kept)
    return data.decode("utf-8", "surrogatepass")


def _escape(
    text: str, unsafe: re.Pattern[str], kept: bytes, sub: Callable[[re.Match[str]], str]
) -> str:
    """`text` with what `unsafe` matches replaced by `sub`; a long text is searched in its
    suspects first, so one without any is returned at C speed."""
    probe = _suspects(text, kept) if len(text) > LONG_TEXT else text
    return text if unsafe.search(probe) is None else unsafe.sub(sub, text)


def terminal(text: str) -> str:
    """One value from a trace, safe on a line of terminal output (see the module doc)."""
    return _escape(text, _UNSAFE, _PRINTABLE, _escaped)


def terminal_lines(text: str) -> str:
    """A block of output, safe for a terminal: like `terminal`, but newlines and tabs stay."""
    return _escape(text, _UNSAFE_IN_BLOCK, _PRINTABLE_BLOCK, _escaped)


# ---------------------------------------------------------------- CSV

FORMULA_START = "=+-@\t\r"
# A cell a spreadsheet reads as a number (so a leading sign is no formula). ASCII digits only.
# (Unambiguous: `[0-9]+\.?[0-9]*` split a run of digits every way before failing on a long one.)
NUMBER = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_NUMBER = re.compile(NUMBER)
_FORMULA = "^[=+\\-@\\t\\r]"


def csv_cell(text: str) -> str:
    """A CSV cell that no spreadsheet runs as a formula: `=1+2` -> `'=1+2`, `-3.5` stays."""
    if text[:1] and text[0] in FORMULA_START and _NUMBER.match(text) is None:
        return "'" + text
    return text


def csv_safe(df: pl.DataFrame) -> pl.DataFrame:
    """Every text cell of a table through `csv_cell` (categoricals become text first); numeric,
    boolean and null cells are left as they are."""
    import polars as pl

    exprs = []
    for name, dtype in df.schema.items():
        if isinstance(dtype, pl.Categorical | pl.Enum):
            column = pl.col(name).cast(pl.String)
        elif dtype == pl.String:
            column = pl.col(name)
        else:
            continue
        risky = column.str.contains(_FORMULA) & ~column.str.contains(NUMBER)
        exprs.append(pl.when(risky).then(pl.lit("'") + column).otherwise(column).alias(name))
    return df.with_columns(exprs) if exprs else df


# ---------------------------------------------------------------- JSON

_UNSAFE_IN_JSON = re.compile(f"[{_BEYOND_C0}]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_safe(text: str) -> str:
    """JSON text with every character `terminal` would escape written as a JSON escape (C0 is
    already escaped by any JSON encoder); the JSON value is the same."""
    return _escape(text, _UNSAFE_IN_JSON, _BELOW_DEL, _json_escape)
