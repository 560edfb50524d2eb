"""Numbers as a person reads them: the one place every text for people (terminal tables,
summaries, findings, the report, chart labels and titles, diff and drive messages) formats a
count or a duration, with thousands separators (`19,019.5 ms`, `10,646`, `1,200 replays`).

Machine formats never go through here: JSON, CSV, Parquet, JUnit attribute values and OTLP
keep raw numbers (`19019.5`). Positions and identifiers are not quantities and are written as
they are everywhere else, without separators: `seq 12345`, line numbers, request ids, error
codes (`-32602`), exit codes, signals, protocol versions, pids.

Imports nothing: the analysis (findings' messages), the recorder and the demo use it too.
"""

from __future__ import annotations


def count(n: int) -> str:
    """A count: `7`, `1,234`, `-12,000`."""
    return f"{n:,}"


def counted(n: int, noun: str, plural_form: str | None = None) -> str:
    """A count and its noun: `1 replay`, `2 replays`, `1,234 history updates`;
    `plural_form` for the irregular ones."""
    return f"{n:,} {noun if n == 1 else plural_form or noun + 's'}"


def ms(value: float) -> str:
    """Milliseconds for a table cell, with three or four significant digits and no unit:
    `0.412`, `3.05`, `87.3`, `1,652.3`, `19,019.5`."""
    size = abs(value)
    if size >= 10 or size == 0:
        return f"{value:,.1f}"
    return f"{value:.2f}" if size >= 1 else f"{value:.3f}"


def duration(value: float) -> str:
    """A duration for a sentence or a chart label, with its unit: `1,359 ms`, `451 ms`,
    `12.3 ms`, `0.25 ms`, `0 ms`."""
    if value == 0:
        return "0 ms"
    if abs(value) >= 100:
        return f"{value:,.0f} ms"
    if abs(value) >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def fixed(value: float, decimals: int, *, sign: bool = False) -> str:
    """A number with exactly `decimals` decimals: `2,033.555`, `+1,204.5` with `sign`."""
    return f"{value:+,.{decimals}f}" if sign else f"{value:,.{decimals}f}"


def trimmed(value: float, decimals: int = 2) -> str:
    """A number with at most `decimals` decimals, trailing zeros dropped: `1,327`, `0.25`,
    `1,500.5`; `-0` is `0`."""
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def percent(value: float, *, sign: bool = True) -> str:
    """A percentage without decimals: `+12%`, `-1,250%`; `0%` for what rounds to zero (never
    `-0%`)."""
    if round(value) == 0:
        return "0%"
    return f"{value:+,.0f}%" if sign else f"{value:,.0f}%"


def seconds(value: float) -> str:
    """Seconds to the millisecond: `0.412 s`, `1,234.500 s`."""
    return f"{value:,.3f} s"


def size(n: int) -> str:
    """A size in bytes, as a person reads it: `512 B`, `12.5 kB`, `3.2 MB`, `1,024.0 MB`."""
    if n < 1024:
        return f"{n:,} B"
    if n < 1 << 20:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1048576:,.1f} MB"
