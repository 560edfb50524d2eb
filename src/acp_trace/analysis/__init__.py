"""The offline analyzer: records in, derived tables and findings out.

`timeline` (pairing, sessions, update classes) -> `replays` (the replay pass: windows,
markers, outcomes, timings) -> `checks` (the rule registry), `latency` (requests and prompt
turns), `summary` (one row per trace). `front` is the front door: `analyze(paths)` returns a
lazy `Analysis`. It reads traces through `acp_trace.trace` and knows nothing of rendering.
The names below load `front` on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_trace.analysis.front import (
        Analysis,
        Paths,
        analyze,
        check,
        replays_of,
        timeline_of,
    )

__all__ = ["Analysis", "Paths", "analyze", "check", "replays_of", "timeline_of"]


def __getattr__(name: str) -> Any:
    """The front door's names load it on first use (PEP 562): a subpackage that needs none
    of it (the rule catalogue of `acp-trace rules`) loads no polars."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module("acp_trace.analysis.front"), name)
    globals()[name] = value
    return value
