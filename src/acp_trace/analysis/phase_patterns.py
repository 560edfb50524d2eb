"""The registry of how agents log a finished phase on stderr (docs/analysis.md, "The gap,
explained"): a pattern per agent family, then a generic `KEY=VALUE` duration fallback."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class PhasePattern:
    """How one agent family logs a finished phase: a regex with groups `name` and `value`,
    the unit of `value`, and where the format was read (the agent and version)."""

    family: str
    regex: re.Pattern[str]
    unit: str
    source: str


PATTERNS: list[PhasePattern] = [
    PhasePattern(
        "claude-agent-acp",
        re.compile(
            r"^\[[^\]]+\].*?\bphase=(?P<name>[\w.:/-]+).*?\bdurationMs=(?P<value>\d+(?:\.\d+)?)\b"
        ),
        "ms",
        "claude-agent-acp 0.101.0 stderr: `[session/create] sessionId=S phase=NAME durationMs=N`",
    ),
    PhasePattern(
        "gemini-cli",
        re.compile(
            r"\[STARTUP\] Recording metric for phase: (?P<name>\S+) duration: (?P<value>\d+(?:\.\d+)?)"
        ),
        "ms",
        "gemini-cli 0.61.0 StartupProfiler.flush(), printed with --debug",
    ),
]

UNITS = {"ms": 1.0, "s": 1000.0, "us": 0.001, "µs": 0.001, "ns": 1e-6}
# The generic fallback: `KEY=VALUE[UNIT]` where the key or the unit says it is a duration.
_KEY_VALUE = re.compile(
    r"(?<![\w.-])(?P<key>[A-Za-z][\w.-]*)=(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|us|µs|ns|s)?(?![\w.])"
)
# A unit or a duration word ends the key after a separator (`load_ms`, `sdk.duration`) or a
# camelCase hump (`initMs`, `waitSecs`, `initElapsed`), or is the whole key: `rows`, `items`
# and `messages` end in a unit's letters and are counts.
_UNITS = "ms|us|ns|s|secs|seconds"
_KEY_UNIT = re.compile(
    rf"(?:(?:^|[_.-])(?P<unit>(?i:{_UNITS}))|(?<=[a-z0-9])(?P<camel>Ms|MS|Us|Ns|S|Secs|Seconds))$"
)
_KEY_WORD = re.compile(r"(?:^|[_.-]|(?<=[a-z0-9])(?=[A-Z]))(?i:duration|elapsed|took|latency)$")
_NOT_DURATIONS = re.compile(r"timeout|ttl|interval|limit|max|min|budget|deadline", re.IGNORECASE)


@dataclass(frozen=True)
class Phase:
    """A phase an stderr line names: its name, the family whose pattern matched, its length."""

    name: str
    family: str
    duration_ms: float


def parse_phase(text: str) -> Phase | None:
    """The phase a line of stderr names: the first family pattern that matches, else the first
    generic duration field (`load_ms=12`, `sdk_duration=1.5s`, `initElapsed=40ms`); None."""
    for pattern in PATTERNS:
        match = pattern.regex.search(text)
        if match is not None:
            value = float(match["value"]) * UNITS[pattern.unit]
            return Phase(match["name"], pattern.family, value)
    for match in _KEY_VALUE.finditer(text):
        phase = _generic(match["key"], float(match["value"]), match["unit"])
        if phase is not None:
            return phase
    return None


def _generic(key: str, value: float, suffix: str | None) -> Phase | None:
    """A `key=value` field as a phase, when the key's ending or the value's unit says it is a
    duration and the key names no setting (timeout, interval, limit, ...)."""
    if _NOT_DURATIONS.search(key):
        return None
    unit, base = suffix, key
    found = _KEY_UNIT.search(key)
    if found and (found.start() > 0 or suffix is None):
        unit = unit or _unit_name(found["unit"] or found["camel"])
        base = key[: found.start()]
    word = _KEY_WORD.search(base)
    if unit is None and word is None:
        return None
    name = (base[: word.start()] if word else base).strip("._-") or base.strip("._-") or key
    return Phase(name, "generic", value * UNITS[unit or "ms"])


def _unit_name(unit: str) -> str:
    lowered = unit.lower()
    return "s" if lowered in ("s", "secs", "seconds") else lowered
