"""The one range check of numeric options, made by click as it parses them, so that a value no
command can honour (`nan`, `inf` where a time must end, `1e300` seconds, a negative pace) is
refused in one line before any work starts: `Invalid value for '--speed': ...`."""

from __future__ import annotations

import math
from typing import Any


class Number:
    """A float in [`low`, `high`] (`low` itself excluded when `above`); `inf` only where
    `forever` says what it means; NaN never. A typer `parser=`: its ValueError is typer's
    usage error, which the CLI prints as one line naming the option."""

    def __init__(
        self,
        low: float,
        high: float | None = None,
        *,
        above: bool = False,
        forever: str | None = None,
    ) -> None:
        self.low, self.high, self.above, self.forever = low, high, above, forever
        self.__name__ = "NUMBER"  # typer names the parameter's type after its parser

    def __call__(self, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._refused(value) from None
        if math.isinf(number) and number > 0 and self.forever is not None:
            return number
        too_low = number <= self.low if self.above else number < self.low
        too_high = self.high is not None and number > self.high
        if math.isnan(number) or math.isinf(number) or too_low or too_high:
            raise self._refused(value)
        return number

    def _refused(self, value: Any) -> ValueError:
        return ValueError(f"{str(value)!r}: expected {self.expected()}")

    def expected(self) -> str:
        """`a number from 0 to 1e+09, or inf (no limit)`."""
        low = f"above {self.low:g}" if self.above else f"from {self.low:g}"
        text = f"a number {low}" + (f" to {self.high:g}" if self.high is not None else "")
        return text + (f", or inf ({self.forever})" if self.forever else "")
