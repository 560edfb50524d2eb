"""What a replay weighs and what a client would have suffered (rules.md "Replay weight, client
limits and deadlines"): the lines as a client reads them (`lines.py`), the fields of each replay
row (`fields.py`), the known limits and deadlines (`known.py`) with a user's own (`options.py`),
the lines over a limit (`limits.py`). The analyzer hands it plain spans; it imports nothing of
acp_trace but the shared vocabulary."""

from acp_trace.weight.fields import (
    FIELDS,
    ReplayWeight,
    SessionSpan,
    WindowSpan,
    replay_weights,
    silences,
)
from acp_trace.weight.options import DEFAULT, Threshold, WeightOptions, weight_options

__all__ = [
    "DEFAULT",
    "FIELDS",
    "ReplayWeight",
    "SessionSpan",
    "Threshold",
    "WeightOptions",
    "WindowSpan",
    "replay_weights",
    "silences",
    "weight_options",
]
