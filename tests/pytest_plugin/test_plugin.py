"""The plugin as pytest loads it (entry point pytest11): light, harmless to other suites, and
the README's example test file run against demo-agent."""

from __future__ import annotations

import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acp_trace.jsonrpc import loads
from drivelib import HANG, demo_agent, readme_example, running, wait_for
from testpaths import ROOT

pytest_plugins = ["pytester"]


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    """`import acp_trace.pytest_plugin` (what pytest does at start) loads no polars,
    matplotlib or numpy."""
    code = (
        "import acp_trace.pytest_plugin, sys; "
        "print(sorted({'polars', 'matplotlib', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_unrelated_suite_is_untouched(pytester: pytest.Pytester) -> None:
    """A plain test file passes with the plugin installed and loaded, strict markers and
    warnings as errors, and nothing heavy is imported."""
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_plain():
            assert "acp_trace.pytest_plugin" in sys.modules
            assert not {"polars", "matplotlib"} & set(sys.modules)
        """
    )
    result = pytester.runpytest_subprocess(
        "--strict-markers", "-W", "error", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def _agent_env(monkeypatch: pytest.MonkeyPatch, protocol: int, *faults: str) -> None:
    fault_args = [a for f in faults for a in ("--fault", f)]
    agent = demo_agent("--session", "sess_stored", "--turns", "4", *fault_args)
    monkeypatch.setenv("ACP_AGENT", shlex.join(agent))
    monkeypatch.setenv("ACP_SESSION", "sess_stored")
    monkeypatch.setenv("ACP_PROTOCOL", str(protocol))
    monkeypatch.setenv("ACP_CWD", "/tmp/project")


@pytest.mark.parametrize("protocol", [1, 2])
def test_the_readme_example_passes_against_demo_agent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, protocol: int
) -> None:
    """The README's test file, as an agent author saves it, passes against demo-agent in v1
    and v2, and --acp-trace-dir keeps one trace per test."""
    _agent_env(monkeypatch, protocol)
    pytester.makepyfile(test_my_agent=readme_example())
    kept = pytester.path / "traces"
    result = pytester.runpytest_subprocess(
        "--strict-markers", "-W", "error", f"--acp-trace-dir={kept}"
    )
    result.assert_outcomes(passed=3)
    traces = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*.jsonl"))
    assert traces == [
        "test_my_agent.py_test_a_stored_session_replays_its_history/agent-1.jsonl",
        "test_my_agent.py_test_an_unknown_session_is_an_error/agent-1.jsonl",
        "test_my_agent.py_test_initialize/agent-1.jsonl",
    ]


def test_a_failing_example_reports_the_finding_and_the_trace(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against an agent that drops the v2 marker, the replay test fails with the finding as
    its message and the trace path in an acp-trace report section."""
    _agent_env(monkeypatch, 2, "marker-missing")
    pytester.makepyfile(test_my_agent=readme_example())
    result = pytester.runpytest_subprocess("-k", "stored_session")
    result.assert_outcomes(failed=1)  # and no error: the check does not repeat a failure
    result.stdout.fnmatch_lines(
        [
            "*outcome unmarked, expected complete*",
            "*marker-missing (error, blames the agent) at seq * session sess_stored:*",
            "*- acp-trace -*",
            "trace: */agent-1.jsonl",
        ]
    )


QUIET = """
import os, shlex
import pytest

{marker}
def test_resume(acp_agent):
    agent = acp_agent(shlex.split(os.environ["ACP_AGENT"]))
    agent.client.initialize(protocol=2)
    agent.client.resume("sess_stored", cwd="/tmp/project")
"""
CHECK_FAILED = [
    "*acp-trace check: 1 error finding(s) in the agent's trace:*",
    "*live-before-marker (error, blames the agent) at seq *",
    "*- acp-trace -*",
]


def test_acp_check_fails_a_test_on_error_findings(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that asserts nothing fails (a failed test, not an error at teardown) when its
    trace has an error finding under --acp-check, with the finding as the failure's text and
    the trace path; without the option it passes."""
    _agent_env(monkeypatch, 2, "live-before-marker")
    pytester.makepyfile(test_quiet=QUIET.format(marker=""))
    result = pytester.runpytest_subprocess("--strict-markers", "--acp-check", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(CHECK_FAILED)
    result.stdout.fnmatch_lines(
        ["FAILED test_quiet.py::test_resume - Failed: acp-trace check: 1 error*"]
    )
    assert "at teardown" not in result.stdout.str()
    pytester.runpytest_subprocess("--strict-markers").assert_outcomes(passed=1)


def test_the_acp_check_marker_does_the_same_for_one_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acp_check marker (registered: --strict-markers accepts it) checks that test, and
    fails it the same way."""
    _agent_env(monkeypatch, 2, "live-before-marker")
    pytester.makepyfile(test_quiet=QUIET.format(marker="@pytest.mark.acp_check"))
    result = pytester.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(CHECK_FAILED)


def test_a_known_rule_can_be_allowed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--acp-allow RULE (and the marker's allow=[...]) lets that rule's errors pass the check;
    another rule allowed does not."""
    _agent_env(monkeypatch, 2, "live-before-marker")
    pytester.makepyfile(test_quiet=QUIET.format(marker=""))
    allowed = pytester.runpytest_subprocess(
        "--strict-markers", "--acp-check", "--acp-allow", "live-before-marker"
    )
    allowed.assert_outcomes(passed=1)
    other = pytester.runpytest_subprocess(
        "--strict-markers", "--acp-check", "--acp-allow", "marker-late"
    )
    other.assert_outcomes(failed=1)
    marked = '@pytest.mark.acp_check(allow=["live-before-marker"])'
    pytester.makepyfile(test_quiet=QUIET.format(marker=marked))
    pytester.runpytest_subprocess("--strict-markers").assert_outcomes(passed=1)


PARAMETRIZED = """
import os, shlex
import pytest

@pytest.mark.parametrize("name", ["a b", "a_b", "a/b"])
def test_p(acp_agent, name):
    agent = acp_agent(shlex.split(os.environ["ACP_AGENT"]))
    agent.client.initialize(protocol=2)
    agent.client.request("session/new", {"cwd": "/tmp/" + name.replace(" ", "-"), "mcpServers": []})
"""


def test_test_ids_that_differ_by_a_space_an_underscore_or_a_slash_keep_their_own_traces(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three parametrized tests whose ids differ only by ' ', '_' and '/' get three folders
    under --acp-trace-dir, each with its own test's trace; a second run into the same
    folder makes new folders and leaves the first run's traces as they were."""
    _agent_env(monkeypatch, 2)
    pytester.makepyfile(test_p=PARAMETRIZED)
    kept = pytester.path / "traces"
    pytester.runpytest_subprocess(f"--acp-trace-dir={kept}").assert_outcomes(passed=3)
    first = {p: p.read_bytes() for p in kept.rglob("agent-1.jsonl")}
    assert len(first) == 3
    cwds = sorted(
        next(part for part in data.decode().split('"') if part.startswith("/tmp/a"))
        for data in first.values()
    )
    assert cwds == ["/tmp/a-b", "/tmp/a/b", "/tmp/a_b"]
    assert all(stat.S_IMODE(p.parent.stat().st_mode) == 0o700 for p in first)
    pytester.runpytest_subprocess(f"--acp-trace-dir={kept}").assert_outcomes(passed=3)
    assert len(list(kept.rglob("agent-1.jsonl"))) == 6
    assert {p: p.read_bytes() for p in first} == first


HANGING = """
import sys, time

def test_hang(acp_agent):
    agent = acp_agent([sys.executable, {agent!r}, {pid!r}], grace=1)
    agent.client.notify("hello", {{}})
    open({flag!r} + ".tmp", "w").write(str(agent.trace))
    __import__("os").rename({flag!r} + ".tmp", {flag!r})
    time.sleep(600)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_pytest_ends_the_agent_and_keeps_its_trace(
    pytester: pytest.Pytester, signum: signal.Signals
) -> None:
    """SIGINT (pytest stops, exit 2, and closes the agents) or SIGTERM (pytest dies at once;
    the tap sees its client's stdin end): either way the agent is ended by the tap and the
    kept trace ends with the tap's exit and account records."""
    agent, pid, flag = (pytester.path / n for n in ("hang.py", "agent.pid", "in-test"))
    agent.write_text(HANG)
    pytester.makepyfile(test_hang=HANGING.format(agent=str(agent), pid=str(pid), flag=str(flag)))
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_hang.py",
         f"--acp-trace-dir={pytester.path / 'kept'}"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for(flag.exists, "the test to start its agent")
        wait_for(pid.exists, "the agent to run")
        run.send_signal(signum)
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == (2 if signum == signal.SIGINT else -signal.SIGTERM), out
    agent_pid = int(pid.read_text())
    wait_for(lambda: not running(agent_pid), "the agent to end")
    trace = Path(flag.read_text())
    wait_for(lambda: b'"account"' in trace.read_bytes(), "the tap's last record")
    events = [loads(line).get("event") for line in trace.read_bytes().splitlines()[1:]]
    assert events[-2:] == ["exit", "account"]


def test_folder_names_are_readable_distinct_and_fit() -> None:
    """A plain test id gives a readable folder name; ids that differ only inside a parameter
    get distinct names (a hash of the exact id, as docs/testing.md shows); a long id is cut
    to fit a file name and stays distinct."""
    from acp_trace.pytest_plugin import folder_name_of

    assert folder_name_of("tests/test_x.py::test_y") == "tests_test_x.py_test_y"
    names = [folder_name_of(f"test_p.py::test_p[a{c}b]") for c in " _/"]
    assert len(set(names)) == 3 and all(n.startswith("test_p.py_test_p_a_b~") for n in names)
    assert names[0] == "test_p.py_test_p_a_b~0267b97a"
    assert names[0] in (ROOT / "docs" / "testing.md").read_text()
    long = [folder_name_of(f"t.py::test[{c * 400}]") for c in "xy"]
    assert long[0] != long[1] and all(len(n.encode()) <= 255 for n in long)
