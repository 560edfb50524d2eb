"""Vendor end-of-replay events: a `session/update` whose `params._meta` or
`params.update._meta` holds a known path with a known value, sent by an agent where
`replay_complete` would go (rules.md, "Vendor end-of-replay events").

Known today (`KNOWN`, recognised by default): claude-agent-acp 0.101.0's
`jetbrains.air.loadReplayEnd` = `true`, sent once after the whole replay of a `session/load`
(and of a v2 resume from the start) to clients that advertise the AIR capability
`loadReplayEnd` in initialize. `--marker-meta PATH[=VALUE]` names another (`parse`).

The module imports nothing heavy: the CLI checks `--marker-meta` with it before reading traces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from acp_trace.errors import UsageError
from acp_trace.jsonrpc import AIR_PATH, air_opted_in, json_text, loads_exact


@dataclass(frozen=True)
class VendorEvent:
    """A known end-of-replay event: a dotted `_meta` path and, when `has_value`, the JSON
    value it must hold (compared as JSON: `true` is not `1`). `opt_in` reads a client's
    initialize params and says whether the client asked for the event; None for an event
    named with `--marker-meta` (the user's word: every v1 load expects it)."""

    path: str
    value: Any = None
    has_value: bool = False
    agent: str = ""
    opt_in: Callable[[dict[str, Any]], bool] | None = None

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.split("."))

    @property
    def needle(self) -> str:
        """A text every message holding the event contains (its last path segment), to find
        the candidates without parsing every update."""
        return self.segments[-1]

    @property
    def label(self) -> str:
        """`jetbrains.air.loadReplayEnd = true`, for messages."""
        return f"{self.path} = {json_text(self.value)}" if self.has_value else self.path

    def matches(self, msg: Any) -> bool:
        """True when a session/update carries the path (with the value, when one is given) in
        `params._meta` or `params.update._meta`."""
        params = msg.get("params") if isinstance(msg, dict) else None
        if not isinstance(params, dict):
            return False
        update = params.get("update")
        for holder in (params, update if isinstance(update, dict) else {}):
            meta = holder.get("_meta")
            if isinstance(meta, dict) and self._walk(meta, self.segments):
                return True
        return False

    def _walk(self, obj: dict[str, Any], rest: tuple[str, ...]) -> bool:
        """The path matched whole: its segments are keys of nested objects, where a key may
        itself hold dots (`executablemd.session-materialization/v1`)."""
        for i in range(1, len(rest) + 1):
            key = ".".join(rest[:i])
            if key not in obj:
                continue
            value = obj[key]
            if i == len(rest):
                if not self.has_value or json_equal(value, self.value):
                    return True
            elif isinstance(value, dict) and self._walk(value, rest[i:]):
                return True
        return False


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two parsed JSON values as JSON: types count (`true` is not `1`, a string
    is not a number), objects compare key by key, arrays in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    if (a is None) != (b is None) or isinstance(a, str) != isinstance(b, str):
        return False
    return bool(a == b)


KNOWN: tuple[VendorEvent, ...] = (
    VendorEvent(AIR_PATH, True, True, "claude-agent-acp", air_opted_in),
)


def parse(text: str) -> VendorEvent:
    """`--marker-meta PATH[=VALUE]`: a dotted `_meta` path, with an optional JSON value.
    UsageError for an empty path or segment, or a value that is not JSON."""
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not path or any(not part for part in path.split(".")):
        raise UsageError(
            f"--marker-meta {text!r}: expected a dotted _meta path with an optional JSON "
            "value, such as jetbrains.air.loadReplayEnd or vendor.replayDone=true"
        )
    if not sep:
        return VendorEvent(path)
    try:
        value = loads_exact(raw)
    except ValueError:
        raise UsageError(
            f"--marker-meta {text!r}: the value {raw!r} after '=' is not JSON "
            '(write true, 1, "done" or an object)'
        ) from None
    return VendorEvent(path, value, True)


def registry(marker_meta: str | None) -> tuple[VendorEvent, ...]:
    """The events recognised: `--marker-meta`'s first (it decides a row both name), then the
    known ones."""
    named = (parse(marker_meta),) if marker_meta else ()
    return named + tuple(k for k in KNOWN if not named or k.path != named[0].path)


def first_match(events: Iterable[VendorEvent], msg: Any) -> VendorEvent | None:
    """The first event of `events` that a message carries, or None."""
    return next((e for e in events if e.matches(msg)), None)
