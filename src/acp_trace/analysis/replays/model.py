"""What the replay pass finds: windows, per-session stats, marker facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RESUME_METHODS = ("session/resume", "session/load")
NEW_METHODS = ("session/new", "session/fork")


@dataclass
class SessionStats:
    """What one session did inside one window (the parent session or an announced child)."""

    session: str
    parent: str | None = None
    announce_row: int | None = None
    was_active: bool = False
    marker_row: int | None = None
    marker_vendor: str | None = None  # the vendor event's path when one is the marker (v1)
    marker_before_announce: bool = False
    vendor_row: int | None = None  # the first vendor end-of-replay event in the window
    vendor_path: str | None = None
    first_update_row: int | None = None
    last_history_row: int | None = None
    first_history_row: int | None = None
    state_row: int | None = None
    window_history: int = 0  # history updates in the whole window, marker or not
    history_updates: int = 0
    history_bytes: int = 0
    live_updates: int = 0
    live_rows: list[int] = field(default_factory=list)
    request_rows: list[int] = field(default_factory=list)
    missing_id_rows: list[int] = field(default_factory=list)
    suggestion_rows: list[int] = field(default_factory=list)  # prompt_suggestions_update

    def gap_origin(self) -> tuple[int | None, str | None]:
        """Where the gap a reader should use starts, and its `gap_source` (rules.md): the
        marker (`vendor:PATH` when the marker is a vendor event, as in a v1 load: a vendor
        event is never called a marker), else the first vendor end-of-replay event, else the
        last history update."""
        if self.marker_row is not None:
            vendor = self.marker_vendor
            return self.marker_row, f"vendor:{vendor}" if vendor else "marker"
        if self.vendor_row is not None:
            return self.vendor_row, f"vendor:{self.vendor_path}"
        if self.last_history_row is not None:
            return self.last_history_row, "last_history"
        return None, None


@dataclass
class Window:
    """A session/resume or session/load request, from the request to its response or the end."""

    index: int
    trace: str
    req_row: int
    request_id: str | None
    method: str
    session: str
    protocol: int | None
    replaying: bool  # a replaying resume (v2 with cursor) or a v1 load
    expects_marker: bool  # v2 replaying resume, or v1 load with --marker-meta
    v2: bool
    cursor: Any
    was_active: bool
    end_row: int | None = None
    end: str = "open"  # response | error | connection | open
    error_code: int | None = None
    # a v1 load without --marker-meta whose client opted in to a vendor event the agent had
    # already sent on the connection: (path, the row it was first sent) (rules.md)
    vendor_promise: tuple[str, int] | None = None
    sessions: dict[str, SessionStats] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.end == "response"


@dataclass(frozen=True)
class MarkerFact:
    """A marker row and what it is: matched, duplicate, late, unexpected or before_announce."""

    row: int
    trace: str
    session: str | None
    status: str
    window: int | None  # the window it matched (or that covered the session, for late)


@dataclass
class Facts:
    """Everything the replay pass found in a timeline."""

    windows: list[Window] = field(default_factory=list)
    markers: list[MarkerFact] = field(default_factory=list)
    concurrent: list[tuple[int, int]] = field(default_factory=list)  # (request row, window)
    load_after: list[tuple[int, list[int]]] = field(default_factory=list)  # (window, rows)
    named: str | None = None  # the event --marker-meta names, as messages show it
