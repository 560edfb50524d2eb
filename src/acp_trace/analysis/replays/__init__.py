"""Replays: one pass over a timeline that finds every resume/load window, matches markers, and
measures each replaying request per session (rules.md: outcomes and timings).

The pass records facts (windows, what each marker turned out to be, concurrent replays,
history after a v1 load response); `checks` turns facts into findings and `replays_table`
turns windows into the public replays table.
"""

from __future__ import annotations

from acp_trace.analysis.replays.model import Facts, MarkerFact, SessionStats, Window
from acp_trace.analysis.replays.table import REPLAY_SCHEMA, outcome, replays_table
from acp_trace.analysis.replays.window_pass import NEW_METHODS, RESUME_METHODS, collect

__all__ = [
    "NEW_METHODS",
    "REPLAY_SCHEMA",
    "RESUME_METHODS",
    "Facts",
    "MarkerFact",
    "SessionStats",
    "Window",
    "collect",
    "outcome",
    "replays_table",
]
