"""The offline analyzer: records in, derived tables and findings out.

`timeline` (pairing, sessions, update classes) -> `replays` (the replay pass: windows,
markers, outcomes, timings) -> `checks` (the rule registry), `latency` (requests and prompt
turns), `summary` (one row per trace). `front` is the front door: `analyze(paths)` returns a
lazy `Analysis`. It reads traces through `acp_trace.trace` and knows nothing of rendering.
"""

from __future__ import annotations

from acp_trace.analysis.front import Analysis, Paths, analyze, check, replays_of, timeline_of

__all__ = ["Analysis", "Paths", "analyze", "check", "replays_of", "timeline_of"]
