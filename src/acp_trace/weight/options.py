"""The weight pass's options (rules.md "Replay weight, client limits and deadlines"): the
known limits and deadlines with a user's own (`--frame-limit BYTES[=NAME]`,
`--deadline MS[=NAME]`), the quiet-window client's window and cap (`--quiet-window MS`,
`--quiet-cap MS`). Every value is checked here, before any trace is read: a bad one is a
UsageError of one line."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from acp_trace.errors import UsageError
from acp_trace.quantities import duration
from acp_trace.weight.known import DEADLINES, LIMITS, Known

QUIET_WINDOW_MS = 250.0
QUIET_CAP_MS = 10_000.0
# The largest values taken: a limit of a tebibyte, a deadline of a day. Larger is a typo.
MAX_LIMIT = 1 << 40
MAX_MS = 86_400_000.0
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 1 << 20}
_UNITS |= {"gb": 10**9, "gib": 1 << 30}
_BYTES = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)")
_NAME_MAX = 60


@dataclass(frozen=True)
class Threshold:
    """A limit or deadline as the pass uses it: its value, its name and who has it (the known
    entries it stands for, or the user's own)."""

    value: int | float
    name: str
    clients: str
    source: str


@dataclass(frozen=True)
class WeightOptions:
    """What the weight pass compares with: limits in bytes and deadlines in ms, each ascending
    and one per value (entries of one value merged), and the quiet-window client."""

    limits: tuple[Threshold, ...]
    deadlines: tuple[Threshold, ...]
    quiet_window_ms: float = QUIET_WINDOW_MS
    quiet_cap_ms: float = QUIET_CAP_MS

    def largest_limit_passed(self, length: int) -> Threshold | None:
        """The largest limit a line of `length` bytes is longer than."""
        return _largest_below(self.limits, length)

    def largest_deadline_passed(self, silence_ms: float) -> Threshold | None:
        """The largest deadline a silence of `silence_ms` is longer than."""
        return _largest_below(self.deadlines, silence_ms)


def _largest_below(items: tuple[Threshold, ...], value: float) -> Threshold | None:
    passed = [t for t in items if value > t.value]
    return passed[-1] if passed else None


def weight_options(
    frame_limits: Iterable[str] = (),
    deadlines: Iterable[str] = (),
    quiet_window_ms: float | str | None = None,
    quiet_cap_ms: float | str | None = None,
) -> WeightOptions:
    """The options from their command-line spellings (UsageError for any bad one). A user's
    limit or deadline without a name, equal to a known one, is that one."""
    limits = _with_known(LIMITS, [_frame_limit(s) for s in frame_limits])
    waits = _with_known(DEADLINES, [_deadline(s) for s in deadlines])
    window = QUIET_WINDOW_MS if quiet_window_ms is None else quiet_window_ms
    cap = QUIET_CAP_MS if quiet_cap_ms is None else quiet_cap_ms
    return WeightOptions(
        _merged(limits),
        _merged(waits),
        _ms(_number(window), "--quiet-window", shown=window),
        _ms(_number(cap), "--quiet-cap", shown=cap),
    )


def _with_known(known: tuple[Known, ...], mine: list[tuple[Threshold, bool]]) -> list[Threshold]:
    values = {k.value for k in known}
    own = [t for t, named in mine if named or t.value not in values]
    return [_known(k) for k in known] + own


def _number(value: float | str) -> float:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return value


def _known(k: Known) -> Threshold:
    return Threshold(k.value, k.name, k.clients, k.source)


def _merged(items: list[Threshold]) -> tuple[Threshold, ...]:
    """One threshold per value, ascending: the names and clients of equal ones joined."""
    by_value: dict[int | float, list[Threshold]] = {}
    for t in items:
        by_value.setdefault(t.value, []).append(t)
    out = []
    for value in sorted(by_value):
        same = by_value[value]
        names = list(dict.fromkeys(t.name for t in same))
        out.append(
            Threshold(
                value,
                " = ".join(names),
                "; ".join(dict.fromkeys(t.clients for t in same)),
                "; ".join(dict.fromkeys(t.source for t in same if t.source)),
            )
        )
    return tuple(out)


def _split(spelling: str, option: str, metavar: str) -> tuple[str, str | None]:
    value, sep, name = spelling.partition("=")
    if not sep:
        return value.strip(), None
    name = name.strip()
    if not name or len(name) > _NAME_MAX or not name.isprintable():
        raise UsageError(
            f"{option} {spelling!r}: expected {metavar}=NAME with a NAME of 1 to {_NAME_MAX} "
            "printable characters"
        )
    return value.strip(), name


def _frame_limit(spelling: str) -> tuple[Threshold, bool]:
    """`--frame-limit BYTES[=NAME]`: BYTES a whole number of bytes, or with a unit (KB, MB, GB
    decimal; KiB, MiB, GiB binary), from 1 byte to 1 TiB."""
    text, name = _split(spelling, "--frame-limit", "BYTES")
    m = _BYTES.fullmatch(text)
    unit = _UNITS.get(m.group(2).lower()) if m else None
    n = float(m.group(1)) * unit if m and unit else -1.0
    if not m or unit is None or n != int(n) or not 1 <= n <= MAX_LIMIT:
        raise UsageError(
            f"--frame-limit {spelling!r}: expected a size from 1 byte to 1 TiB in whole bytes, "
            "as 65536, 16MiB or 4MB (KB, MB, GB decimal; KiB, MiB, GiB binary), then "
            "=NAME if you like"
        )
    shown = name or f"{int(n):,} bytes"
    return Threshold(int(n), shown, name or "your --frame-limit", ""), name is not None


def _deadline(spelling: str) -> tuple[Threshold, bool]:
    text, name = _split(spelling, "--deadline", "MS")
    ms = _ms(_number(text), "--deadline", shown=spelling)
    return Threshold(ms, name or duration(ms), name or "your --deadline", ""), name is not None


def _ms(value: float, option: str, shown: float | str) -> float:
    """A duration in milliseconds: finite, above 0, at most a day."""
    if not math.isfinite(value) or not 0 < value <= MAX_MS:
        given = repr(shown) if isinstance(shown, str) else f"{shown:g}"
        raise UsageError(
            f"{option} {given}: expected a number of milliseconds above 0 and at most "
            "86,400,000 (a day)"
        )
    return float(value)


DEFAULT = weight_options()
