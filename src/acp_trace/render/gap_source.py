"""Where a replay's gap starts, named for a person from the replays table's `gap_source`: one
function for every chart, table, report and export that shows it (rules.md, "Replay
timings": a vendor event is never called a marker where a person reads it). Light: no
polars, no matplotlib."""

from __future__ import annotations

MARKER = "marker"
FALLBACK = "last_history"
VENDOR = "vendor:"  # the prefix of a vendor event's source, `vendor:PATH`


def gap_start(source: str | None) -> str:
    """Where a gap starts, named for a person from its `gap_source` (rules.md), in every text
    that shows one (the charts, the report, the terminal): `replay_complete marker`, `vendor
    event PATH` (a vendor end-of-replay event is never called a marker, even where it is a v1
    load's marker for the rules), `last history update (no marker)`; `-` for no gap."""
    if source is None:
        return "-"
    if source == MARKER:
        return "replay_complete marker"
    if source.startswith(VENDOR):
        return f"vendor event {source.removeprefix(VENDOR)}"
    if source == FALLBACK:
        return "last history update (no marker)"
    return source
