"""acp-trace: record and analyze Agent Client Protocol traffic."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("acp-trace")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

from acp_trace.analysis import Analysis, analyze, check
from acp_trace.analysis import replays_of as replays
from acp_trace.analysis import timeline_of as timeline
from acp_trace.errors import AcpTraceError, InputError, RecordError, UsageError
from acp_trace.trace_io import read_trace

__all__ = [
    "AcpTraceError",
    "Analysis",
    "InputError",
    "RecordError",
    "UsageError",
    "__version__",
    "analyze",
    "check",
    "read_trace",
    "replays",
    "timeline",
]
