"""`acp-trace drive`: play a recording's client side against a live agent, behind the tap, and
say what differed from the recording (docs/drive.md).

`run_drive` is the front door: it reads the recording (`script.py`), plays it (`player.py`),
and sets the new trace against the recording (`compare.py`); `report.py` writes it as text.
"""

from __future__ import annotations

from acp_trace.drive.run import DriveOptions, DriveOutcome, run_drive

__all__ = ["DriveOptions", "DriveOutcome", "run_drive"]
