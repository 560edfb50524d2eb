"""What `acp-trace record` is asked to do and how a recording ended: the vocabulary that the
tap, the trace file and the command line share (so none of them imports another for it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_GRACE = 3.0
DEFAULT_QUEUE_BYTES = 256 << 20


@dataclass(frozen=True)
class RecordOptions:
    """What `acp-trace record` was asked to do."""

    command: list[str]
    output: Path | None = None
    directory: Path | None = None
    redact: bool = True
    redact_stderr: tuple[str, ...] = ()  # regexes replaced in recorded stderr lines
    max_record_bytes: int | None = None
    grace: float = DEFAULT_GRACE
    queue_bytes: int = DEFAULT_QUEUE_BYTES


@dataclass(frozen=True)
class RecordResult:
    """How a recording ended: the agent's exit code (128+N after signal N) and the trace."""

    exit_code: int
    trace: Path
    records: int
    dropped: int
    write_error: str | None
