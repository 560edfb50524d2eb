"""SIGTERM and SIGHUP end an analysis command as sys.exit does: what it made is cleaned up."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_trace.trace.handoff import handoff_directory


@pytest.fixture
def handlers() -> Iterator[None]:
    """The test process's handlers of SIGTERM and SIGHUP, put back afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for signum in saved:
        signal.signal(signum, signal.SIG_DFL)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.usefixtures("handlers")
def test_a_termination_signal_exits_through_the_cleanups(tmp_path: Path, signum: int) -> None:
    """The signal raises SystemExit(128 + N) where the command is, and the files of rows of a
    reading pool go with their directory on the way out."""
    from importlib import import_module

    app = import_module("acp_trace.cli.app")
    app._exit_on_termination()
    with pytest.raises(SystemExit) as exited, handoff_directory(str(tmp_path)) as directory:
        assert directory is not None
        Path(directory, "rows.arrow").write_bytes(b"rows")
        os.kill(os.getpid(), signum)
    assert exited.value.code == 128 + signum
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("handlers")
def test_an_ignored_hangup_stays_ignored() -> None:
    """Under nohup (SIGHUP ignored) the command does not start to end on a hangup."""
    from importlib import import_module

    app = import_module("acp_trace.cli.app")
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    app._exit_on_termination()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is app._terminated
