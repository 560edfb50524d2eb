"""What every test starts from, whoever runs the suite and however: a home of its own (a machine
that never ran acp-trace), and the signals a terminal gives a command. It stands at the root,
not in tests/, because tests/peers imports its own conftest by that name from the path."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from suiteenv import session_environment


@pytest.fixture(scope="session", autouse=True)
def fresh_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME, XDG_STATE_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_DATA_HOME and MPLCONFIGDIR
    point into an empty folder of the session (the person's own ~/.local/state and the like
    neither help nor hinder a test), and the environment is put back afterwards."""
    home = tmp_path_factory.mktemp("home")
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(session_environment(home, saved))
    try:
        yield home
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session", autouse=True)
def terminal_signals() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGHUP ends a process, as in a terminal, even when
    the suite was started with them ignored (`nohup`, or `pytest &` in a script: SIGINT is
    ignored there): the tests send them to processes they start, which inherit an ignored
    signal and rightly keep it ignored (`acp-trace mock` and the analysis commands do)."""
    wanted = {signal.SIGINT: signal.default_int_handler, signal.SIGHUP: signal.SIG_DFL}
    saved = {signum: signal.getsignal(signum) for signum in wanted}
    for signum, handler in wanted.items():
        if saved[signum] is signal.SIG_IGN:
            signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None:  # None: not set from Python, left as it is
                signal.signal(signum, handler)
