"""`plot`: a chart of `acp-trace plot` as PNG bytes, drawn in memory (matplotlib imported as
`nowrite.py` has it: writing nothing), and never more than PLOT_CHARS base64 characters."""

from __future__ import annotations

import io

from acp_trace.errors import UsageError
from acp_trace.mcpserver.nowrite import matplotlib_writing_nothing
from acp_trace.mcpserver.store import Loaded

PLOT_CHARS = 250_000  # the most base64 characters of one chart (docs/mcp.md)


def chart(
    loaded: Loaded, kind: str, trace: str | None, session: str | None, request: str | None
) -> bytes:
    """The PNG of one chart (gap, replay, weight, latency), drawn in memory; drawn again at a lower
    resolution when its base64 text would be over PLOT_CHARS."""
    matplotlib_writing_nothing()
    from acp_trace.render import plots
    from acp_trace.render.plots._common import DPI

    if kind not in plots.PICKED and any(v is not None for v in (trace, session, request)):
        raise UsageError(
            f"trace, session and request choose a replay: use kind replay or weight, not {kind}"
        )
    full = None
    if trace is not None:
        full = loaded.full_name(trace)
        if full is None:
            raise UsageError(f"trace {trace}: no such trace; {loaded.choices()}")
    try:
        figure = plots.figure(loaded.analysis, kind, session=session, request=request, trace=full)
    except UsageError as exc:
        raise UsageError(str(exc).removeprefix("--")) from None
    dpi = float(DPI)
    while True:
        out = io.BytesIO()
        figure.savefig(out, format="png", dpi=dpi)
        png = out.getvalue()
        if base64_chars(len(png)) <= PLOT_CHARS or dpi < DPI / 8:
            return png
        dpi /= 1.5


def base64_chars(size: int) -> int:
    """The length of the base64 text of `size` bytes."""
    return 4 * ((size + 2) // 3)
