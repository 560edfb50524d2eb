"""The suite runs in a home of its own and with the signals of a terminal (conftest.py at the root),
whoever starts it and however."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from suiteenv import HOME_VARIABLES, session_environment


def test_home_and_the_xdg_folders_lie_in_the_sessions_own_folder(fresh_home: Path) -> None:
    """HOME, the XDG folders and MPLCONFIGDIR point into the session's empty home, which holds
    no state of acp-trace (a machine that never ran it), and ACP_TRACE_DIR is unset."""
    assert Path.home() == fresh_home
    for name, where in HOME_VARIABLES.items():
        assert os.environ[name] == str(fresh_home / where)
    assert "ACP_TRACE_DIR" not in os.environ
    assert not (fresh_home / ".local" / "state" / "acp-trace").exists()


def test_the_peers_cache_and_npms_registry_settings_stay_the_persons(tmp_path: Path) -> None:
    """The peers' npm packages stay in the person's ~/.cache/acp-trace and npm reads their
    ~/.npmrc; an ACP_TRACE_CACHE or NPM_CONFIG_USERCONFIG already set is kept."""
    real = tmp_path / "real"
    real.mkdir()
    (real / ".npmrc").write_text("registry=http://127.0.0.1:4873/\n")
    environ = {"HOME": str(real), "ACP_TRACE_DIR": "/somewhere", "PATH": "/bin"}
    env = session_environment(tmp_path / "home", environ)
    assert env["HOME"] == str(tmp_path / "home") and env["PATH"] == "/bin"
    assert env["ACP_TRACE_CACHE"] == str(real / ".cache" / "acp-trace")
    assert env["NPM_CONFIG_USERCONFIG"] == str(real / ".npmrc")
    assert "ACP_TRACE_DIR" not in env
    given = environ | {"ACP_TRACE_CACHE": "/c", "NPM_CONFIG_USERCONFIG": "/n"}
    env = session_environment(tmp_path / "home", given)
    assert (env["ACP_TRACE_CACHE"], env["NPM_CONFIG_USERCONFIG"]) == ("/c", "/n")


def test_a_process_a_test_starts_takes_sigint_and_sighup() -> None:
    """A child of the suite has SIGINT and SIGHUP as a terminal gives them, even when the
    suite was started with them ignored (`nohup`, `pytest &` in a script)."""
    probe = (
        "import signal as s; print(s.getsignal(s.SIGINT) is s.default_int_handler,"
        " s.getsignal(s.SIGHUP) == s.SIG_DFL)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120)
    assert done.stdout == b"True True\n", done.stderr
