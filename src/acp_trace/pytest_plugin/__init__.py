"""The acp-trace pytest plugin (entry point `pytest11`; docs/testing.md).

The `acp_agent` fixture starts an agent command behind the tap with a trace per test and
hands the test an AgentUnderTest: `.client` a synchronous ACP client, `.expect` assertions on
the analysis of its trace. `--acp-check` (or the `acp_check` marker) runs each test's traces
through the rule catalogue and fails the test on error findings; `--acp-trace-dir DIR` keeps
the traces under DIR/<test id>/ (CI artifacts); a failing test's report names its traces.

This module loads nothing heavy: the client comes when a test asks for `acp_agent`, the
analyzer (polars) when a test asserts on a trace or a check runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from acp_trace.pytest_plugin.agent import AgentUnderTest

TRACES = pytest.StashKey[list[Path]]()
CALL_FAILED = pytest.StashKey[bool]()
CHECK_MARKER = "acp_check"


def pytest_addoption(parser: pytest.Parser) -> None:
    """--acp-trace-dir and --acp-check (also as ini options)."""
    group = parser.getgroup("acp-trace", "ACP agents behind the acp-trace tap")
    group.addoption(
        "--acp-trace-dir",
        metavar="DIR",
        default=None,
        help="Keep each test's ACP traces in DIR/<test id>/ (default: the test's tmp_path).",
    )
    group.addoption(
        "--acp-check",
        action="store_true",
        default=None,
        help="Run every test's ACP traces through `acp-trace check`; error findings fail it.",
    )
    parser.addini("acp_trace_dir", "Default of --acp-trace-dir.", default=None)
    parser.addini("acp_check", "Default of --acp-check.", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (suites run with --strict-markers)."""
    config.addinivalue_line(
        "markers",
        f"{CHECK_MARKER}: run this test's ACP traces through `acp-trace check` and fail it "
        "on error findings (acp-trace)",
    )


@pytest.fixture
def acp_agent(request: pytest.FixtureRequest) -> Iterator[Callable[..., AgentUnderTest]]:
    """`acp_agent(["my-agent", ...], env=None, cwd=None, timeout=30, grace=5)` starts the
    agent behind the tap and returns it (`.client`, `.expect`, `.trace`); each is closed at
    the end of the test, and its trace checked when asked (unless the test failed already)."""
    started: list[AgentUnderTest] = []
    folder = _trace_folder(request)

    def start(command: Sequence[str], **options: Any) -> AgentUnderTest:
        from acp_trace.pytest_plugin.agent import AgentUnderTest

        trace = folder / f"agent-{len(started) + 1}.jsonl"
        request.node.stash.setdefault(TRACES, []).append(trace)
        agent = AgentUnderTest(command, trace, **options)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.close()
    if _check_wanted(request) and not request.node.stash.get(CALL_FAILED, False):
        _check(started)  # a test that failed already shows its own failure


def _trace_folder(request: pytest.FixtureRequest) -> Path:
    config = request.config
    keep = config.getoption("--acp-trace-dir") or config.getini("acp_trace_dir")
    if not keep:
        path: Path = request.getfixturevalue("tmp_path")
        return path
    from acp_trace.files import output_dir

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.nodeid).strip("._") or "test"
    root = output_dir(Path(str(keep)).expanduser())  # made when its parent exists, like -o DIR/
    return output_dir(root / name)  # new directories 0700


def _check_wanted(request: pytest.FixtureRequest) -> bool:
    option = request.config.getoption("--acp-check")
    wanted = option if option is not None else request.config.getini("acp_check")
    return bool(wanted) or request.node.get_closest_marker(CHECK_MARKER) is not None


def _check(agents: list[AgentUnderTest]) -> None:
    from acp_trace.pytest_plugin.expect import findings_text
    from acp_trace.quantities import count

    for agent in agents:
        errors = agent.expect.findings("error")
        if errors.height:
            pytest.fail(
                f"acp-trace check: {count(errors.height)} error finding(s) in the agent's trace:\n"
                f"{findings_text(errors, agent.trace)}",
                pytrace=False,
            )


@pytest.hookimpl(hookwrapper=True)  # old-style: works with every pytest that has StashKey
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report names the traces its agents wrote."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and report.failed:
        item.stash[CALL_FAILED] = True
    traces = item.stash.get(TRACES, [])
    if report.failed and traces:
        report.sections.append(("acp-trace", "\n".join(f"trace: {t}" for t in traces)))
