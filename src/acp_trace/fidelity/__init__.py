"""Replay fidelity: is the replay the session? (rules.md "Replay fidelity")

Messages and tool calls of a replay window (`messages.py`), set against the replay's source,
the session as the traces recorded it (`source.py`), matched by id then by content
(`match.py`), into the fields and differences of each replay row (`compare.py`). The analyzer
hands over its windows and turns as plain spans (`spans.py`): this package reads only the
timeline's columns and imports nothing of acp_trace but the shared vocabulary.
"""

from acp_trace.fidelity.compare import against, compare
from acp_trace.fidelity.result import FIELDS, WHATS, Difference, ReplayFidelity
from acp_trace.fidelity.spans import NewSession, ReplaySpan, TurnSpan

__all__ = [
    "FIELDS",
    "WHATS",
    "Difference",
    "NewSession",
    "ReplayFidelity",
    "ReplaySpan",
    "TurnSpan",
    "against",
    "compare",
]
