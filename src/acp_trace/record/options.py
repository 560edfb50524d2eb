"""What `acp-trace record` is asked to do and how a recording ended: the vocabulary that the
tap, the trace file and the command line share (so none of them imports another for it).

Named tuples, not dataclasses: this module is on the tap's start-up path, and `dataclasses`
brings `inspect`, `ast` and `dis` with it (issue 34: start-up at most 30 ms over relay.py)."""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

DEFAULT_GRACE = 3.0
DEFAULT_QUEUE_BYTES = 1 << 30  # the ring's 256 MiB and the writer's backlog (backlog.py)
DEFAULT_MAX_RECORD_BYTES = 64 << 20


class RecordOptions(
    namedtuple(
        "RecordOptions",
        "command output directory redact redact_stderr redact_content max_record_bytes grace "
        "queue_bytes listen upstream",
        defaults=(None, None, True, (), True, DEFAULT_MAX_RECORD_BYTES, DEFAULT_GRACE,
                  DEFAULT_QUEUE_BYTES, None, None),
    )
):  # fmt: skip
    """What `acp-trace record` was asked to do: `command` (the agent's argv), `output` and
    `directory` (a path or None), `redact`, `redact_stderr` (regexes replaced in recorded stderr
    lines), `redact_content` (credentials in free text: acp_trace.credentials),
    `max_record_bytes`, `grace` (seconds) and `queue_bytes`; `listen` and `upstream` name the
    remote recorder's address and URL (acp_trace.remote takes those lines, never the tap)."""

    __slots__ = ()
    command: list[str]
    output: str | PathLike[str] | None
    directory: str | PathLike[str] | None
    redact: bool
    redact_stderr: tuple[str, ...]
    redact_content: bool
    max_record_bytes: int
    grace: float
    queue_bytes: int
    listen: str | None
    upstream: str | None


class RecordResult(
    namedtuple("RecordResult", "exit_code trace records dropped write_error")
):  # fmt: skip
    """How a recording ended: the agent's exit code (128+N after signal N), the trace, the
    records written, and those that were not (dropped from a full queue, or after the trace
    could not be written), with the reason the trace stopped if it did."""

    __slots__ = ()
    exit_code: int
    trace: Path
    records: int
    dropped: int
    write_error: str | None
