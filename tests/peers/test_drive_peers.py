"""`acp-trace drive` and the pytest plugin against a real agent: codex-acp (Rust), v1 load of a
fabricated history, in a loopback-only netns with a private HOME."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import peerlib
import pytest
from conftest import SID

from acp_trace.drive import DriveOptions, run_drive
from acp_trace.drive.report import format_drive
from drivelib import readme_example

pytestmark = pytest.mark.peers

PEER = "codex-acp-rs"
TURNS = 6


def _options(recording: Path, new: Path, env: dict[str, str]) -> DriveOptions:
    agent = (str(peerlib.NETNS_RUN), *peerlib.command(PEER))  # the agent alone in the netns
    return DriveOptions(recording, agent, output=new, speed=0, timeout=90, env=env)


def test_drive_replays_a_codex_load(peers_ready: None, tmp_path: Path) -> None:
    """A recorded v1 load driven against the same agent and history: the same outcome and
    count, nothing regressed; against a HOME without the session: -32002, the note on how to
    give the agent one, and a regression."""
    project = tmp_path / "project"
    project.mkdir()
    env = peerlib.fabricate(PEER, tmp_path, SID, str(project), TURNS)
    run = peerlib.record(PEER, tmp_path, env, sid=SID, cwd=str(project), protocol=1)
    assert run.client_exit == 0, run.client_output

    same = run_drive(_options(run.trace, tmp_path / "same.jsonl", env))
    text = format_drive(same)
    assert not same.regressed, text
    [replay] = same.comparison.replays.iter_rows(named=True)
    assert replay["recorded_outcome"] == replay["this_run_outcome"] == "v1_loaded", text
    assert replay["recorded_history_updates"] == replay["this_run_history_updates"] == 2 * TURNS

    empty_env = peerlib.fabricate(PEER, tmp_path / "other", "0198c0de-0000-7000-8000-0000000000ff",
                                  str(project), 1)  # fmt: skip
    missing = run_drive(_options(run.trace, tmp_path / "missing.jsonl", empty_env))
    text = format_drive(missing)
    assert missing.regressed
    assert f"session/load of session {SID} was answered -32002 (unknown session)" in text
    assert f"--session {SID}=STORED_ID" in text
    [replay] = missing.comparison.replays.iter_rows(named=True)
    assert replay["this_run_outcome"] == "v1_failed"


def test_the_readme_example_passes_against_codex(peers_ready: None, tmp_path: Path) -> None:
    """The README's test file, unchanged, passes against codex-acp with a stored session,
    one kept trace per test."""
    project = tmp_path / "project"
    project.mkdir()
    env = peerlib.fabricate(PEER, tmp_path, SID, str(project), TURNS)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_my_agent.py").write_text(readme_example())
    env.update(
        ACP_AGENT=" ".join(peerlib.command(PEER)),
        ACP_SESSION=SID,
        ACP_CWD=str(project),
        ACP_PROTOCOL="1",
    )
    done = subprocess.run(
        [str(peerlib.NETNS_RUN), sys.executable, "-m", "pytest", "-q", "-W", "error",
         "--strict-markers", "-p", "no:cacheprovider", f"--acp-trace-dir={tmp_path / 'traces'}"],
        env=env, cwd=suite, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    assert len(list((tmp_path / "traces").rglob("agent-1.jsonl"))) == 3


@pytest.mark.parametrize(("peer", "protocol"), [("codex-acp-rs", 1), ("claude-agent-acp", 1),
                                                ("gemini-cli", 1)])  # fmt: skip
def test_drive_catches_a_history_cut_to_a_tenth(
    peers_ready: None, tmp_path: Path, peer: str, protocol: int
) -> None:
    """A load recorded with 20 turns, driven against the same agent whose stored session holds
    2: the replay's history shrank and the recorded messages are missing, each a regression
    (issue 41: drive used to call this "no regression")."""
    project = tmp_path / "project"
    project.mkdir()
    env = peerlib.fabricate(peer, tmp_path / "full", SID, str(project), 20)
    run = peerlib.record(peer, tmp_path / "full", env, sid=SID, cwd=str(project), protocol=protocol)
    assert run.client_exit == 0, run.client_output
    cut_env = peerlib.fabricate(peer, tmp_path / "cut", SID, str(project), 2)
    agent = (str(peerlib.NETNS_RUN), *peerlib.command(peer))
    options = DriveOptions(run.trace, agent, output=tmp_path / "cut.jsonl", speed=0, timeout=90,
                           env=cut_env)  # fmt: skip
    cut = run_drive(options)
    text = format_drive(cut).replace("\n  ", " ")
    assert cut.regressed, text
    assert "history 40 -> 4 messages (-90%)" in text or "history 41 -> 5 messages" in text, text
    assert "of the recording's" in text and "messages missing" in text, text
