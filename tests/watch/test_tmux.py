"""The real thing: `acp-trace watch` on a terminal (a tmux pane) while `demo-client` drives
`demo-agent --gap 2` through `acp-trace record`; the pane shows the replay's gap counting up,
then its outcome; with `--fault marker-missing`, the finding as soon as it is decided; a
signal ends it with 128 + N and gives the terminal back."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TMUX = shutil.which("tmux")
GAP = re.compile(r"gap\s+(\d+(?:\.\d+)?) (s|ms) since the (marker|last history update), growing")


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Callable[[], str]]:
    """`acp-trace watch` (no argument: the folder `record` writes to) in a 150x45 tmux pane
    on a private server; returns a function that captures the pane's text."""
    if TMUX is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    socket, traces = tmp_path / "tmux.sock", tmp_path / "traces"
    traces.mkdir()
    env = {**os.environ, "ACP_TRACE_DIR": str(traces), "TERM": "xterm-256color"}
    tmux = [TMUX, "-S", str(socket), "-f", "/dev/null"]
    watch = f"exec {BIN / 'acp-trace'} watch"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "w", "-x", "150", "-y", "45", watch], env=env, check=True
    )
    shown = [*tmux, "display-message", "-p", "-t", "w", "#{pane_pid}"]
    pid = int(subprocess.run(shown, capture_output=True, check=True).stdout)

    def capture() -> str:
        done = subprocess.run([*tmux, "capture-pane", "-p", "-t", "w"], capture_output=True)
        return done.stdout.decode("utf-8", "replace")

    capture.env = env  # type: ignore[attr-defined]
    try:
        yield capture
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        _ends_with_its_terminal(pid)


def _ends_with_its_terminal(pid: int) -> None:
    """The watch ends when its terminal is closed (no orphan left drawing nowhere)."""
    deadline = time.monotonic() + 60  # a hang guard only
    while Path(f"/proc/{pid}").exists() and b"acp-trace" in _cmdline(pid):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("acp-trace watch outlived its terminal")
        time.sleep(0.05)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _client(env: dict[str, str], *fault: str) -> subprocess.Popen[bytes]:
    agent = [str(BIN / "acp-trace"), "demo-agent", "--gap", "2", *fault]
    record = [str(BIN / "acp-trace"), "record", "--", *agent]
    # the agent's session from before: a new one has no history to replay
    command = [str(BIN / "acp-trace"), "demo-client", "--session", "sess_demo", "--", *record]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _until(capture: Callable[[], str], test: Callable[[str], object], what: str) -> str:
    deadline = time.monotonic() + 180  # a hang guard only: the pane is read until it shows it
    while True:
        screen = capture()
        if test(screen):
            return screen
        assert time.monotonic() < deadline, f"the pane never showed {what}:\n{screen}"
        time.sleep(0.05)


def _gaps(screen: str) -> list[float]:
    return [float(v) * (1000 if unit == "s" else 1) for v, unit, _ in GAP.findall(screen)]


def _follow(capture: Callable[[], str], outcome: str) -> tuple[list[float], str]:
    """The gaps the pane showed while it grew, and the pane once the outcome is there."""
    seen: list[float] = []

    def grown_or_done(screen: str) -> bool:
        seen.extend(_gaps(screen))
        return f"outcome   {outcome}" in screen

    final = _until(capture, grown_or_done, f"the outcome {outcome}")
    return seen, final


def test_the_gap_counts_up_then_the_outcome(pane: Callable[[], str]) -> None:
    env = pane.env  # type: ignore[attr-defined]
    _until(pane, lambda s: "No replay yet" in s, "the empty screen")
    client = _client(env)
    seen, final = _follow(pane, "complete")
    _out, err = client.communicate(timeout=120)
    assert client.returncode == 0, err
    assert len(set(seen)) >= 2 and seen == sorted(seen), seen  # it counted up
    assert "marker    at" in final
    gap = re.search(r"outcome   complete   gap (\d+\.\d+) s", final)
    assert gap and float(gap.group(1)) >= 2.0
    assert "exit 0" in _until(pane, lambda s: "exit 0" in s, "the agent's exit")


def test_a_missing_marker_shows_its_finding_live(pane: Callable[[], str]) -> None:
    env = pane.env  # type: ignore[attr-defined]
    _until(pane, lambda s: "No replay yet" in s, "the empty screen")
    client = _client(env, "--fault", "marker-missing")
    running = _until(pane, lambda s: "marker    not yet" in s and GAP.search(s), "the gap")
    assert "since the last history update, growing" in running
    seen, final = _follow(pane, "unmarked")
    _out, err = client.communicate(timeout=120)
    assert client.returncode == 0, err
    assert len(set(seen)) >= 2 and seen == sorted(seen), seen
    assert "findings  marker-missing" in final and "marker    none" in final


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_ends_the_screen_with_128_plus_n_and_gives_the_terminal_back(
    tmp_path: Path, signum: int
) -> None:
    """SIGTERM, SIGHUP or SIGINT sent to the screen: it exits 143, 129 or 130 with one line,
    and the terminal is left as it was (main screen, no mouse tracking, the cursor shown)."""
    if TMUX is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    socket, traces = tmp_path / "tmux.sock", tmp_path / "traces"
    traces.mkdir()
    env = {**os.environ, "ACP_TRACE_DIR": str(traces), "TERM": "xterm-256color"}
    tmux = [TMUX, "-S", str(socket), "-f", "/dev/null"]
    shell = f"{BIN / 'acp-trace'} watch; echo rc=$?; exec sleep 600"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "w", "-x", "150", "-y", "45", "sh", "-c", shell],
        env=env,
        check=True,
    )

    def capture() -> str:
        done = subprocess.run([*tmux, "capture-pane", "-p", "-t", "w"], capture_output=True)
        return done.stdout.decode("utf-8", "replace")

    def modes() -> str:
        flags = "alt=#{alternate_on} mouse=#{mouse_any_flag} cursor=#{cursor_flag}"
        shown = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "w", flags], capture_output=True
        )
        return shown.stdout.decode().strip()

    try:
        _until(capture, lambda s: "No replay yet" in s, "the empty screen")
        assert modes() == "alt=1 mouse=1 cursor=0"  # the screen's own modes, to be undone
        shown = [*tmux, "display-message", "-p", "-t", "w", "#{pane_pid}"]
        shell_pid = int(subprocess.run(shown, capture_output=True, check=True).stdout)
        (watch,) = Path(f"/proc/{shell_pid}/task/{shell_pid}/children").read_text().split()
        os.kill(int(watch), signum)
        final = _until(capture, lambda s: "rc=" in s, "the exit code")
        name = signal.Signals(signum).name
        assert f"rc={128 + signum}" in final, final
        assert f"acp-trace: interrupted by {name}" in final
        assert modes() == "alt=0 mouse=0 cursor=1"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
