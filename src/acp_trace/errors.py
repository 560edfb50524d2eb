"""One error hierarchy for acp-trace: the CLI turns any of these into `acp-trace: <message>`, exit 2."""

from __future__ import annotations


class AcpTraceError(Exception):
    """Base class: the message says what was expected, what happened and where."""


class InputError(AcpTraceError):
    """An input (trace file, directory, glob) cannot be read at all."""


class UsageError(AcpTraceError):
    """The arguments do not make sense together (unknown rule id, missing session, ...)."""


class RecordError(AcpTraceError):
    """The recorder cannot start (agent not found, trace file cannot be created)."""


class OutputError(AcpTraceError):
    """An output (`-o` file or directory) cannot be written where it was asked for."""


class WorkerError(AcpTraceError):
    """A worker process (`--workers`) died twice on the same traces (killed, out of memory)."""
