"""Selectors that match nothing (`--session NOSUCH`) are errors that show the choices."""

from __future__ import annotations

from collections.abc import Sequence

from acp_trace.errors import UsageError
from acp_trace.quantities import count

SHOWN = 10  # choices listed before "and N more"


def listing(choices: Sequence[str]) -> str:
    """`a, b, c`, or the first SHOWN and `and N more`."""
    shown = ", ".join(choices[:SHOWN])
    more = len(choices) - SHOWN
    return shown + (f" and {count(more)} more" if more > 0 else "")


def no_match(option: str, value: str, among: str, choices: Sequence[str]) -> UsageError:
    """`--session X: not among the replaying sessions (a, b)`, or that there are none."""
    if not choices:
        return UsageError(f"{option} {value}: there are no {among}")
    return UsageError(f"{option} {value}: not among the {among} ({listing(choices)})")
