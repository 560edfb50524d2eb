"""The one range check of numeric options, made by click as it parses them, so that a value no
command can honour (`nan`, `inf` where a time must end, `1e300` seconds, a negative pace) is
refused in one line before any work starts: `Invalid value for '--speed': ...`."""

from __future__ import annotations

import math
from typing import Any

import click


class Number(click.ParamType[float, Any]):
    """A float in [`low`, `high`] (`low` itself excluded when `above`); `inf` only where
    `forever` says what it means. NaN never."""

    name = "number"

    def __init__(
        self,
        low: float,
        high: float | None = None,
        *,
        above: bool = False,
        forever: str | None = None,
    ) -> None:
        self.low, self.high, self.above, self.forever = low, high, above, forever

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r}: expected {self.expected()}", param, ctx)
        if math.isnan(number) or (math.isinf(number) and self.forever is None and number > 0):
            self.fail(f"{value!r}: expected {self.expected()}", param, ctx)
        if math.isinf(number) and number > 0:
            return number
        too_low = number <= self.low if self.above else number < self.low
        if too_low or (self.high is not None and number > self.high):
            self.fail(f"{value!r}: expected {self.expected()}", param, ctx)
        return number

    def expected(self) -> str:
        """`a number from 0 to 1e6, or inf (never)`."""
        low = f"above {self.low:g}" if self.above else f"from {self.low:g}"
        text = f"a number {low}" + (f" to {self.high:g}" if self.high is not None else "")
        return text + (f", or inf ({self.forever})" if self.forever else "")
