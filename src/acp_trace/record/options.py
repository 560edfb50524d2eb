"""What `acp-trace record` is asked to do and how a recording ended: the vocabulary that the
tap, the trace file and the command line share (so none of them imports another for it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_GRACE = 3.0
DEFAULT_QUEUE_BYTES = 256 << 20
DEFAULT_MAX_RECORD_BYTES = 64 << 20


@dataclass(frozen=True)
class RecordOptions:
    """What `acp-trace record` was asked to do."""

    command: list[str]
    output: Path | None = None
    directory: Path | None = None
    redact: bool = True
    redact_stderr: tuple[str, ...] = ()  # regexes replaced in recorded stderr lines
    redact_content: bool = True  # credentials in free text (acp_trace.credentials)
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    grace: float = DEFAULT_GRACE
    queue_bytes: int = DEFAULT_QUEUE_BYTES


@dataclass(frozen=True)
class RecordResult:
    """How a recording ended: the agent's exit code (128+N after signal N), the trace, the
    records written, and those that were not (dropped from a full queue, or after the trace
    could not be written), with the reason the trace stopped if it did."""

    exit_code: int
    trace: Path
    records: int
    dropped: int
    write_error: str | None
