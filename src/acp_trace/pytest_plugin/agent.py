"""An agent under test: its command started behind the tap with a trace of its own, the test's
client on its stdio, and the analysis of its trace once it is closed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from acp_trace.drive.tap import finish, seconds_problem, spawn, tap_command
from acp_trace.pytest_plugin.client import AcpClient

if TYPE_CHECKING:
    from acp_trace.analysis import Analysis
    from acp_trace.pytest_plugin.expect import Expect


class AgentUnderTest:
    """One agent process behind the tap; `client` talks to it, `trace` is its recording (and
    `stderr` what the tap and the agent wrote to stderr)."""

    def __init__(
        self,
        command: Sequence[str],
        trace: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = 30.0,
        grace: float = 5.0,
    ) -> None:
        if isinstance(command, str) or not command:
            raise TypeError(f"acp_agent: expected the agent's argv as a list, got {command!r}")
        for problem in (seconds_problem("acp_agent(timeout=...)", timeout, zero=False),
                        seconds_problem("acp_agent(grace=...)", grace, zero=True)):  # fmt: skip
            if problem is not None:
                raise ValueError(problem)
        self.command = tuple(command)
        self.trace = trace
        self.stderr = trace.with_name(trace.stem + ".stderr.log")
        self.grace = grace
        fd = os.open(self.stderr, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self._err: IO[bytes] = os.fdopen(fd, "wb")
        self.proc = spawn(tap_command(trace, self.command, grace), env, self._err, cwd)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.client = AcpClient(self.proc.stdout, self.proc.stdin, timeout)
        self.client.stderr = self.stderr
        self.client.start_reading()
        self.exit_code: int | None = None
        self._analysis: Analysis | None = None

    def close(self) -> int:
        """Close the agent's stdin and wait for the tap to end it; the tap's exit code (the
        agent's, as the tap passes it on). Closing twice is harmless."""
        if self.exit_code is None:
            self.exit_code = finish(self.proc, self.client.rpc, self.grace)
            self._err.close()
        return self.exit_code

    def analysis(self) -> Analysis:
        """The analysis of the trace (closing the agent first)."""
        if self._analysis is None:
            self.close()
            from acp_trace.analysis import analyze

            self._analysis = analyze([self.trace])
        return self._analysis

    @property
    def expect(self) -> Expect:
        """Assertions on the analysis of the trace (closing the agent first)."""
        from acp_trace.pytest_plugin.expect import Expect

        return Expect(self.analysis(), self.trace)
