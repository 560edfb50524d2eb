"""acp-trace: record and analyze Agent Client Protocol traffic.

The public API is lazy: `import acp_trace` loads nothing heavy, so the recorder
(`acp-trace record`) never pays for polars or matplotlib. The names below load their
package on first use.

    import acp_trace
    a = acp_trace.analyze("traces/")     # the Analysis front door (acp_trace.analysis)
    a.replays, a.findings(), a.turns
    acp_trace.plots.gap(a)               # acp_trace.render.plots
    acp_trace.write_report(a, "out/")    # acp_trace.render.report.bundle.write_report

The packages: `record` (the tap), `trace` (format v1, reader, importers), `analyze`
(timeline, replays, checks, latency), `render` (charts, reports, exports), `demo` (the
reference agent and client), `cli` (the command line, the only user of typer).
"""

from __future__ import annotations

from importlib import import_module

from acp_trace.errors import AcpTraceError, InputError, RecordError, UsageError

# typing.TYPE_CHECKING without loading typing: `acp-trace record` starts faster without it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from acp_trace.analysis.diff import diff
    from acp_trace.analysis.front import Analysis, analyze, check
    from acp_trace.analysis.front import replays_of as replays
    from acp_trace.analysis.front import timeline_of as timeline
    from acp_trace.render import plots
    from acp_trace.render.report.bundle import write_report
    from acp_trace.trace.reader import read_trace

# name -> (module, attribute); attribute None means the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    "Analysis": ("acp_trace.analysis.front", "Analysis"),
    "analyze": ("acp_trace.analysis.front", "analyze"),
    "check": ("acp_trace.analysis.front", "check"),
    "diff": ("acp_trace.analysis.diff", "diff"),
    "replays": ("acp_trace.analysis.front", "replays_of"),
    "timeline": ("acp_trace.analysis.front", "timeline_of"),
    "read_trace": ("acp_trace.trace.reader", "read_trace"),
    "plots": ("acp_trace.render.plots", None),
    "write_report": ("acp_trace.render.report.bundle", "write_report"),
}

__all__ = [
    "AcpTraceError",
    "Analysis",
    "InputError",
    "RecordError",
    "UsageError",
    "__version__",
    "analyze",
    "check",
    "diff",
    "plots",
    "read_trace",
    "replays",
    "timeline",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """Load a public name's package on first use (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'acp_trace' has no attribute {name!r}") from None
    value = import_module(module)
    result = value if attribute is None else getattr(value, attribute)
    globals()[name] = result
    return result


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
