"""Everything that turns analysis results into text for people and tools.

- `text`: plain-text renderings for the terminal (summary, tables, timeline, findings);
- `formats`: machine formats (JSON, CSV, JUnit XML) of the same tables.
"""

from __future__ import annotations

from acp_trace.render.report.formats import check_output, frame, frames
from acp_trace.render.report.text import (
    format_findings,
    format_summary,
    format_table,
    format_timeline,
)

__all__ = [
    "check_output",
    "format_findings",
    "format_summary",
    "format_table",
    "format_timeline",
    "frame",
    "frames",
]
