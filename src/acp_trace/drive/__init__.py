"""`acp-trace drive`: play a recording's client side against a live agent, behind the tap, and
say what differed from the recording (docs/drive.md).

`run_drive` is the front door: it reads the recording (`script.py`), plays it (`player.py`,
the agent behind the tap: `tap.py`), and sets the new trace against the recording
(`compare.py`); `report.py` writes it as text. The names load lazily: `drive.tap` (used by
the pytest plugin) must not pull in polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_trace.drive.run import DriveOptions, DriveOutcome, run_drive

__all__ = ["DriveOptions", "DriveOutcome", "run_drive"]


def __getattr__(name: str) -> Any:
    """The front door's names, from run.py on first use (PEP 562)."""
    if name in __all__:
        from acp_trace.drive import run

        return getattr(run, name)
    raise AttributeError(f"module 'acp_trace.drive' has no attribute {name!r}")
