"""Numeric options are checked as they are parsed: a value no command can honour (NaN, an
infinite pace, a time beyond any wait) is one line and exit 2 before any work starts."""

from __future__ import annotations

import pytest

from clirun import Cli
from testpaths import SAMPLES

TRACE = str(SAMPLES / "demo-v1-load.jsonl")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("demo-agent", "--pace", "nan"), "'--pace': 'nan': expected a number from 0 to 3600"),
        (("demo-agent", "--pace", "inf"), "'--pace': 'inf': expected a number from 0 to 3600"),
        (("demo-agent", "--pace", "-1"), "'--pace': '-1': expected a number from 0"),
        (
            ("demo-client", "--timeout", "nan", "--", "x"),
            "'nan': expected a number from 0 to 1e+09, or inf (no limit)",
        ),
        (("demo-client", "--timeout", "1e300", "--", "x"), "'1e300': expected a number from 0"),
        (("demo-client", "--grace", "inf", "--", "x"), "'inf': expected a number from 0 to 1e+09"),
        (
            ("diff", "--confidence", "nan", TRACE, "--", TRACE),
            "'nan': expected a number from 0.5 to 0.999",
        ),
        (
            ("diff", "--confidence", "1", TRACE, "--", TRACE),
            "'1': expected a number from 0.5 to 0.999",
        ),
    ],
)
def test_numbers_out_of_range_are_one_line_and_exit_2(
    cli: Cli, args: tuple[str, ...], says: str
) -> None:
    """Each refused value names the option, the value and the range, in one line."""
    result = cli(*args)
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and says in result.err, result.err


def test_a_number_in_range_is_taken(cli: Cli) -> None:
    """Near miss: the edge of the range is accepted (the diff runs and compares)."""
    result = cli("diff", "--confidence", "0.999", TRACE, "--", TRACE)
    assert result.code in (0, 1), result.err
