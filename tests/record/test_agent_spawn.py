"""Starting the agent (record/agent.py): through setpriv where it has --pdeathsig, else
through a preexec function; either way the agent itself runs, with its own argv and pid, in
its own session, with SIGKILL as its parent-death signal, and a command that cannot run is
one `cannot start` error."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from acp_trace.errors import RecordError
from acp_trace.record import agent
from acp_trace.record.agent import find_setpriv, spawn_agent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")

REPORT = (
    "import ctypes, os, sys\n"
    "got = ctypes.c_int(-1)\n"
    "ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(got), 0, 0, 0)\n"
    "print(got.value, os.getpid(), os.getsid(0) == os.getpid(), sys.argv[1:])\n"
)
LAUNCHERS = ["setpriv", "preexec"]


def _launcher(name: str) -> str | None:
    if name == "preexec":
        return None
    found = find_setpriv()
    if found is None:
        pytest.skip("no util-linux setpriv with --pdeathsig here")
    return found


def _script(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("how", LAUNCHERS)
def test_the_agent_runs_itself_with_sigkill_as_its_parent_death_signal(how: str) -> None:
    proc = spawn_agent([sys.executable, "-c", REPORT, "a b", "--x"], launcher=_launcher(how))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    pdeathsig, pid, leader, argv = out.decode().split(" ", 3)
    assert int(pdeathsig) == signal.SIGKILL
    assert int(pid) == proc.pid  # setpriv execs the agent in its own process
    assert leader == "True"  # a session of its own: the tap signals its group
    assert argv.strip() == "['a b', '--x']"


@pytest.mark.parametrize("how", LAUNCHERS)
def test_a_command_found_on_path_runs(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(tmp_path / "my-agent", '#!/bin/sh\necho ran "$0"\n', 0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}{tmp_path}")
    proc = spawn_agent(["my-agent"], launcher=_launcher(how))
    out, _err = proc.communicate(timeout=60)
    assert out.decode().startswith("ran ")


@pytest.mark.parametrize("how", LAUNCHERS)
def test_what_cannot_run_is_one_cannot_start_error(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _script(tmp_path / "not-executable", "#!/bin/sh\n", 0o644)
    orphan = _script(tmp_path / "no-interpreter", "#!/nonexistent/interpreter -x\n", 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    launcher = _launcher(how)
    cases = {
        "no-such-agent-xyz": "No such file or directory",
        str(tmp_path / "missing"): "No such file or directory",
        str(plain): "Permission denied",
        "not-executable": "Permission denied",
        str(orphan): "No such file or directory",
    }
    for name, reason in cases.items():
        with pytest.raises(RecordError) as caught:
            spawn_agent([name], launcher=launcher)
        assert str(caught.value) == f"cannot start {name}: {reason}"


def test_setpriv_is_used_only_when_it_is_util_linux_with_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old" / "setpriv"  # util-linux before 2.33: no --pdeathsig
    old.parent.mkdir()
    old.write_bytes(b"\x7fELF... reuid\x00regid\x00")
    busybox = tmp_path / "bb" / "busybox"  # a multi-call binary may mention the option
    busybox.parent.mkdir()
    busybox.write_bytes(b"\x7fELF... pdeathsig\x00")
    (tmp_path / "bb" / "setpriv").symlink_to(busybox)
    good = tmp_path / "good" / "setpriv"
    good.parent.mkdir()
    good.write_bytes(b"\x7fELF... pdeathsig\x00 reuid\x00")
    for places, expected in (
        ((str(tmp_path / "none"),), None),
        ((str(old),), None),
        ((str(tmp_path / "bb" / "setpriv"),), None),
        ((str(tmp_path / "none"), str(good)), str(good)),
    ):
        monkeypatch.setattr(agent, "SETPRIV", places)
        assert find_setpriv() == expected, places
