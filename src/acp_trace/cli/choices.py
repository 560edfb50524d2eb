"""Selectors that match nothing (`--session NOSUCH`) are errors that show the choices."""

from __future__ import annotations

from collections.abc import Sequence

from acp_trace.errors import UsageError

SHOWN = 10  # choices listed before "and N more"


def listing(choices: Sequence[str]) -> str:
    """`a, b, c`, or the first SHOWN and `and N more`."""
    shown = ", ".join(choices[:SHOWN])
    more = len(choices) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def no_match(
    option: str, value: str, noun: str, choices: Sequence[str], where: str = ""
) -> UsageError:
    """`--session X: no session X in these traces; the sessions are a, b` (or: there is none)."""
    place = where or "in these traces"
    if not choices:
        return UsageError(f"{option} {value}: no {noun} {value} {place}, and no {noun} at all")
    nouns = noun + "s" if len(choices) != 1 else noun
    are = "are" if len(choices) != 1 else "is"
    return UsageError(
        f"{option} {value}: no {noun} {value} {place}; the {nouns} {are} {listing(choices)}"
    )
