"""acp-devtools 0.4.0, live: it captures claude-agent-acp 0.101.0's v1 loads in front of
`acp-trace record` (devtools_capture.py), and its own export, in both layouts, imports to what
the tap recorded of the same session. Skipped where acp-devtools is not built in the cache
(tests/peers/install_devtools.sh)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import devtools_capture as dc
import peerlib
import pytest
from conftest import SID

import acp_trace
from acp_trace.trace import importers

pytestmark = pytest.mark.peers
# Not `live_updates`: an update the agent sends right after one load's response races the
# client's next request, and the two observers see that race from either end (acp-devtools
# reads the client before the tap does, the tap reads the agent before acp-devtools does), so
# the update can fall in the next load's window for one and not the other.
SAME = ["session", "request_id", "method", "outcome", "history_updates", "history_bytes",
        "gap_source"]  # fmt: skip


@pytest.fixture(scope="module")
def devtools_ready(peers_ready: None) -> None:
    """acp-devtools is built and runs (else the test is skipped, not failed)."""
    reason = dc.missing()
    if reason is not None:
        pytest.skip(f"acp-devtools cannot run here: {reason}")


def _records(path: Path) -> list[dict[str, Any]]:
    ((_, lines),) = importers.convert(path, path.read_bytes())
    return [json.loads(line) for line in lines]


def test_devtools_capture_of_claude_loads_imports_as_the_tap_saw_it(
    devtools_ready: None, tmp_path: Path
) -> None:
    """Two v1 loads with --air through acp-devtools and the tap: the export (indented and
    compact) is detected, ends with the agent's exit, warns of nothing, and its messages and
    replay rows are the tap's."""
    project = tmp_path / "project"
    project.mkdir()
    env = peerlib.fabricate("claude-agent-acp", tmp_path, SID, str(project), 5)
    got = dc.run(tmp_path, env, peerlib.command("claude-agent-acp"), sid=SID, cwd=str(project),
                 protocol=1, resumes=2, client_args=("--air",))  # fmt: skip
    assert got.client_exit == 0, got.client_output
    tap = acp_trace.replays(got.trace).select(SAME).rows()
    assert [row[3] for row in tap] == ["v1_loaded", "v1_loaded"]
    for layout in ("pretty", "compact"):
        export = got.export(tmp_path / f"{layout}.json", *dc.EXPORTS[layout])
        records = _records(export)
        head = records[0]
        assert (head["imported_from"], head["warnings"], head["unconverted"]) == (
            "acp-devtools",
            [],
            0,
        )
        assert records[-1]["event"] == "exit"
        assert acp_trace.replays(export).select(SAME).rows() == tap
        traced = [json.loads(line) for line in got.trace.read_bytes().splitlines()[1:]]
        for src in ("client", "agent"):
            ours = [r for r in records[1:] if r["src"] == src]
            theirs = [r for r in traced if r["src"] == src]
            assert len(ours) == len(theirs)
            pairs = zip(ours, theirs, strict=True)
            assert all(a["msg"] == b["msg"] or "redacted" in b for a, b in pairs)
