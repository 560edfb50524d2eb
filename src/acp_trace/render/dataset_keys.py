"""The folder names of a dataset's partitions: safe for any file system, bounded, and never read
back as something else.

A hive reader turns `key=value` folders into columns and guesses their types: `007` becomes the
integer 7, `__HIVE_DEFAULT_PARTITION__` becomes null, and a long name (28 Japanese characters are
252 bytes percent-encoded) does not fit a file name. So the dataset stores the true `agent` and
`date` in every row, and the folders hold only a key for pruning: `agent_key` is an ASCII slug of
the name (at most 40 characters of `A-Za-z0-9-`, never starting with `.` or `_`, which readers
skip) joined by `~` to 12 hex digits of the name's SHA-256, so it is never a number, a date or
null, and two names never share a folder by accident; a missing agent is
`__HIVE_DEFAULT_PARTITION__` (null, as it is). `day` is the date, or that null.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from typing import Any

NULL_KEY = "__HIVE_DEFAULT_PARTITION__"
SLUG_MAX = 40
_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")


def agent_key(agent: str | None) -> str:
    """The `agent_key=` folder value of an agent's name."""
    if agent is None:
        return NULL_KEY
    slug = _UNSAFE.sub("-", agent).strip("-")[:SLUG_MAX].rstrip("-") or "agent"
    digest = hashlib.sha256(agent.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}~{digest}"


def day_key(day: Any) -> str:
    """The `day=` folder value of a recording's UTC start day."""
    return day.isoformat() if isinstance(day, date) else NULL_KEY
