"""`acp-trace mock TRACE`: serve a recording back as a stdio ACP agent, with faults.

recording.py reads the trace (v1 lines with orjson, other formats through the reader) into
connections and cues; windows.py turns a cue into a window the demo agent's faults
(demo/faults.py) can bend; player.py plays a window at the recorded pace with the client's
ids; server.py negotiates initialize, matches each live request to a recorded one and serves.
"""

from __future__ import annotations

from acp_trace.mock.server import Mock, MockOptions, prepare, run_mock

__all__ = ["Mock", "MockOptions", "prepare", "run_mock"]
