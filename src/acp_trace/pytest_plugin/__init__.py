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

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from acp_trace.pytest_plugin.agent import AgentUnderTest

TRACES = pytest.StashKey[list[Path]]()
AGENTS = pytest.StashKey[list["AgentUnderTest"]]()
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
    group.addoption(
        "--acp-allow",
        action="append",
        metavar="RULE",
        default=None,
        help="With --acp-check: a rule whose error findings do not fail a test (a known one "
        "being fixed; repeatable).",
    )
    parser.addini("acp_trace_dir", "Default of --acp-trace-dir.", default=None)
    parser.addini("acp_check", "Default of --acp-check.", type="bool", default=False)
    parser.addini("acp_allow", "Default of --acp-allow: rule ids.", type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (suites run with --strict-markers)."""
    config.addinivalue_line(
        "markers",
        f"{CHECK_MARKER}(allow=[RULE, ...]): run this test's ACP traces through `acp-trace "
        "check` and fail it on error findings of any rule not allowed (acp-trace)",
    )


@pytest.fixture
def acp_agent(request: pytest.FixtureRequest) -> Iterator[Callable[..., AgentUnderTest]]:
    """`acp_agent(["my-agent", ...], env=None, cwd=None, timeout=30, grace=5)` starts the
    agent behind the tap and returns it (`.client`, `.expect`, `.trace`); each is closed at
    the end of the test (its trace checked first, in the test's call, when asked)."""
    started = request.node.stash.setdefault(AGENTS, [])
    folder = _trace_folder(request)

    def start(command: Sequence[str], **options: Any) -> AgentUnderTest:
        from acp_trace.pytest_plugin.agent import AgentUnderTest

        trace = folder / f"agent-{len(started) + 1}.jsonl"
        agent = AgentUnderTest(command, trace, **options)
        request.node.stash.setdefault(TRACES, []).append(trace)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.close()


def _trace_folder(request: pytest.FixtureRequest) -> Path:
    """The test's tmp_path, or with --acp-trace-dir a new folder DIR/<test id> of its own."""
    config = request.config
    keep = config.getoption("--acp-trace-dir") or config.getini("acp_trace_dir")
    if not keep:
        path: Path = request.getfixturevalue("tmp_path")
        return path
    from acp_trace.files import output_dir

    root = output_dir(Path(str(keep)).expanduser())  # made when its parent exists, like -o DIR/
    return new_folder(root, folder_name_of(request.node.nodeid))


def folder_name_of(nodeid: str) -> str:
    """A folder name for a test id, distinct for distinct ids: the id with `::`, `/` and every
    character but letters, digits, `.`, `_` and `-` made `_`; when that changed anything but
    `::` and `/` (a parameter such as `[a b]`, `[a/b]`, `[a_b]`), a `~` and 8 hex digits of
    the exact id's hash follow, so two ids never share a folder. Cut to fit a file name."""
    import hashlib
    import re

    from acp_trace.files import fitting_name

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("._") or "test"
    if not re.fullmatch(r"(?:[A-Za-z0-9._/-]|::)+", nodeid):
        name += "~" + hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return fitting_name(name, "")


def new_folder(root: Path, name: str) -> Path:
    """`root/name`, made now (0700); when it exists already (an earlier run kept in the same
    DIR), `name-2`, `name-3`...: an earlier run's traces are never overwritten."""
    from acp_trace.files import PRIVATE_DIR, fitting_name

    for attempt in range(1, 1000):
        folder = root / (name if attempt == 1 else fitting_name(name, f"-{attempt}"))
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue
        folder.chmod(PRIVATE_DIR)  # whatever the umask
        return folder
    raise FileExistsError(f"{root / name}: 999 folders of that name exist; clean {root}")


def _check_wanted(item: pytest.Item) -> bool:
    option = item.config.getoption("--acp-check")
    wanted = option if option is not None else item.config.getini("acp_check")
    return bool(wanted) or item.get_closest_marker(CHECK_MARKER) is not None


def _allowed(item: pytest.Item) -> list[str]:
    """The rules --acp-allow, the acp_allow ini option and the marker's `allow` let pass."""
    allow = list(item.config.getoption("--acp-allow") or item.config.getini("acp_allow") or [])
    marker = item.get_closest_marker(CHECK_MARKER)
    if marker is not None:
        allow += list(marker.kwargs.get("allow", ()))
    return allow


def _check(agents: list[AgentUnderTest], allow: list[str]) -> None:
    from acp_trace.pytest_plugin.expect import allowed_out, findings_text
    from acp_trace.quantities import count

    for agent in agents:
        errors = allowed_out(agent.expect.findings("error"), allow)
        if errors.height:
            pytest.fail(
                f"acp-trace check: {count(errors.height)} error finding(s) in the agent's trace:\n"
                f"{findings_text(errors, agent.trace)}",
                pytrace=False,
            )


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """--acp-check: once the test's body has passed (a failing one stops before this), its
    agents are closed and their traces checked, in the call itself: error findings fail the
    test (a failure, not an error at teardown), the findings its message."""
    agents = item.stash.get(AGENTS, [])
    if agents and _check_wanted(item):
        _check(agents, _allowed(item))


@pytest.hookimpl(hookwrapper=True)  # old-style: works with every pytest that has StashKey
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report names the traces its agents wrote."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    traces = item.stash.get(TRACES, [])
    if report.failed and traces:
        report.sections.append(("acp-trace", "\n".join(f"trace: {t}" for t in traces)))
