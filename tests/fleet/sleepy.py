"""Tasks that take long (a minute) and say when they start and end: Ctrl-C's path."""

from __future__ import annotations

import os
import time
from pathlib import Path

import polars as pl

from acp_trace.fleet.work import Part

LONG = 60.0  # seconds: far more than a killed worker takes to go (a hang guard only)


def mark_and_sleep(folder: str) -> None:
    """Write `started-PID` in `folder`, sleep LONG, then write `finished-PID`."""
    Path(folder, f"started-{os.getpid()}").touch()
    time.sleep(LONG)
    Path(folder, f"finished-{os.getpid()}").touch()


def slow_part(part: Part) -> dict[str, pl.DataFrame]:
    """A partition that sleeps in the folder of its first file, and yields nothing."""
    mark_and_sleep(str(part.found[0].path.parent))
    return {}
